//! The plan of the calling-window checks (`sim_zones.rs` runs it): what is created when, and
//! the instants the target's clock stops at, all computed from the target's clock when the
//! checks start and the zones' rules ([`super::sim_zones_defs`]).
//!
//! Four parts, each created when the clock reaches its `setup` (moved there first), its
//! campaigns starting 3 minutes or more after it:
//!
//! - **zones**: a two-minute window about ten minutes ahead, written in a zone west of
//!   UTC, one east of it and one half an hour off the hour; one created four minutes later
//!   and PATCHed to it before it starts (a deployment's also PATCHed to `null`); and one at
//!   local noon in each daylight-saving zone on a day its summer time is in effect;
//! - **days and overnight** (America/Sao_Paulo, from the first Thursday 22:30 ahead): a
//!   22:00 to 22:02 window on Monday to Friday (also with the names in every letter case), on
//!   Saturday alone and on Sunday alone, followed from Friday to the next Friday; 23:59 to
//!   00:01 and 23:57 to 00:00 on Friday, followed over Thursday and Friday night;
//! - **daylight saving**: the nearest pair of a spring-forward and a fall-back change, one
//!   in each hemisphere; on the spring day a window opening in the skipped hour and one
//!   closing in it; on the fall day a window opening and closing in the repeated hour,
//!   looked at through three short campaigns (at its opening, across the change, at its
//!   closing), since the window itself is more than an hour long.
//!
//! Every edge is looked at 1 s before and 1 s after.

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Utc, Weekday};
use chrono_tz::Tz;

use super::fixtures::secs;
use super::sim_zones_defs::*;
use crate::checks::CheckDef;

/// A campaign of the plan.
pub(super) struct Camp {
    pub(super) part: usize,
    pub(super) check: &'static CheckDef,
    pub(super) label: String,
    pub(super) sched: Schedule,
    /// From `start_timestamp` to `end_timestamp`.
    pub(super) life: Span,
    /// Instants the clock stops either side of besides the window's edges (a clock change).
    pub(super) extra: Vec<DateTime<Utc>>,
    /// The schedule it is created with, when it is then PATCHed to `sched` before it starts.
    pub(super) before_patch: Option<Schedule>,
}

impl Camp {
    /// The spans it may dial in: its schedule's, inside its life.
    pub(super) fn expected(&self) -> Vec<Span> {
        self.sched
            .spans(self.life)
            .iter()
            .filter_map(|s| s.within(self.life))
            .collect()
    }

    /// Users enough that it never runs out inside its spans.
    pub(super) fn users(&self) -> u32 {
        let dials: f64 = self
            .expected()
            .iter()
            .map(|s| (s.seconds() * RATE).ceil())
            .sum();
        dials as u32 + 5
    }

    /// The fewest dials a conforming target makes.
    pub(super) fn least(&self) -> usize {
        let dials: f64 = self
            .expected()
            .iter()
            .map(|s| (s.seconds() * RATE).floor())
            .sum();
        dials as usize
    }

    /// 1 s either side of each window edge inside its life, and of the extra instants.
    pub(super) fn stops(&self) -> Vec<DateTime<Utc>> {
        let mut v = Vec::new();
        for s in self.sched.spans(self.life) {
            for e in [s.from, s.to] {
                if self.life.from < e && e < self.life.to {
                    v.extend(around(e));
                }
            }
        }
        for e in &self.extra {
            v.extend(around(*e));
        }
        v
    }
}

/// A deployment of the plan, with the instants a call is placed to it.
pub(super) struct Dep {
    pub(super) part: usize,
    pub(super) check: &'static CheckDef,
    pub(super) label: String,
    pub(super) sched: Schedule,
    pub(super) probes: Vec<DateTime<Utc>>,
    /// The schedule it is created with, when it is then PATCHed to `sched` (none: `null`).
    pub(super) before_patch: Option<Schedule>,
}

/// When a part is created, and whether with it the refusals of a start equal to the end.
pub(super) struct Setup {
    pub(super) at: DateTime<Utc>,
    pub(super) refusals: bool,
}

/// The whole plan.
#[derive(Default)]
pub(super) struct Plan {
    pub(super) setups: Vec<Setup>,
    pub(super) camps: Vec<Camp>,
    pub(super) deps: Vec<Dep>,
    /// The daylight-saving changes looked at.
    pub(super) changes: Vec<Change>,
}

/// 1 s before and 1 s after `t`.
pub(super) fn around(t: DateTime<Utc>) -> [DateTime<Utc>; 2] {
    [t - secs(1), t + secs(1)]
}

fn time(h: u32, m: u32) -> NaiveTime {
    NaiveTime::from_hms_opt(h, m, 0).expect("a time of day")
}

/// The first whole minute at or after `t`.
fn whole_minute(t: DateTime<Utc>) -> DateTime<Utc> {
    let s = t.timestamp();
    let up = s + (60 - s.rem_euclid(60)) % 60;
    let up = if up == s && t.timestamp_subsec_nanos() > 0 {
        up + 60
    } else {
        up
    };
    DateTime::from_timestamp(up, 0).unwrap_or(t)
}

/// Whether `[open, open + len)` is a plain window in `tz`: on one local date, with no clock
/// change in it, so that its local times give back exactly those instants.
fn plain(tz: Tz, open: DateTime<Utc>, len: Duration) -> bool {
    let (a, b) = (open.with_timezone(&tz), (open + len).with_timezone(&tz));
    a.date_naive() == b.date_naive()
        && resolve(tz, a.naive_local(), Edge::Open) == open
        && resolve(tz, b.naive_local(), Edge::Close) == open + len
}

impl Plan {
    /// The plan for a target whose clock shows `t0`.
    pub(super) fn new(t0: DateTime<Utc>) -> Plan {
        let mut p = Plan::default();
        p.zones(t0);
        p.days(t0);
        if let Some(pair) = dst_pair(t0 + Duration::hours(3)) {
            for c in pair {
                p.change(c);
                p.summer(t0, c);
            }
        }
        p
    }

    fn setup(&mut self, at: DateTime<Utc>, refusals: bool) -> usize {
        self.setups.push(Setup { at, refusals });
        self.setups.len() - 1
    }

    fn camp(
        &mut self,
        part: usize,
        check: &'static CheckDef,
        label: String,
        sched: &Schedule,
        life: Span,
    ) {
        self.camps.push(Camp {
            part,
            check,
            label,
            sched: sched.clone(),
            life,
            extra: Vec::new(),
            before_patch: None,
        });
    }

    fn dep(
        &mut self,
        part: usize,
        check: &'static CheckDef,
        label: String,
        sched: &Schedule,
        mut probes: Vec<DateTime<Utc>>,
    ) {
        probes.sort();
        probes.dedup();
        self.deps.push(Dep {
            part,
            check,
            label,
            sched: sched.clone(),
            probes,
            before_patch: None,
        });
    }

    /// A two-minute window in each zone, about ten minutes ahead.
    fn zones(&mut self, t0: DateTime<Utc>) {
        let len = secs(120);
        let zones = [(WEST, "west"), (EAST, "east"), (HALF_HOUR, "half-hour")];
        let mut open = whole_minute(t0 + secs(600));
        for _ in 0..300 {
            if zones.iter().all(|(tz, _)| plain(*tz, open, len)) {
                break;
            }
            open += secs(600);
        }
        let part = self.setup(t0, false);
        let life = Span {
            from: t0 + secs(180),
            to: open + len + secs(300),
        };
        let window = |tz: Tz, from: DateTime<Utc>| {
            Schedule::new(
                tz,
                &EVERY_DAY,
                minute_of(tz, from),
                minute_of(tz, from + len),
            )
        };
        for (tz, name) in zones {
            let s = window(tz, open);
            let label = format!("{ZONES}{name}");
            self.camp(part, &WINDOW_ZONES, label.clone(), &s, life);
            let probes = [around(open), around(open + len)].concat();
            self.dep(part, &INBOUND_ZONES, label, &s, probes);
        }
        // Created with a window four minutes later, PATCHed to this one before it starts.
        let (new, old) = (window(EAST, open), window(EAST, open + secs(240)));
        let label = format!("{ZONES}patched");
        self.camp(part, &WINDOW_ZONES, label.clone(), &new, life);
        self.patched_last_camp(&old);
        let probes = [
            around(open),
            around(open + len),
            around(open + secs(240)),
            around(open + secs(240) + len),
        ]
        .concat();
        self.dep(part, &INBOUND_ZONES, label, &new, probes.clone());
        self.patched_last_dep(&old);
        self.dep(
            part,
            &INBOUND_ZONES,
            format!("{ZONES}patched-null"),
            &Schedule::none(EAST),
            probes,
        );
        self.patched_last_dep(&old);
    }

    fn patched_last_camp(&mut self, before: &Schedule) {
        if let Some(c) = self.camps.last_mut() {
            c.before_patch = Some(before.clone());
        }
    }

    fn patched_last_dep(&mut self, before: &Schedule) {
        if let Some(d) = self.deps.last_mut() {
            d.before_patch = Some(before.clone());
        }
    }

    /// A two-minute window at local noon in the zone of `c` on a day its summer time is in
    /// effect (the day after it springs forward, the day before it falls back), when that
    /// day is still ahead of `t0`: a zone read at its standard offset all year is seen.
    fn summer(&mut self, t0: DateTime<Utc>, c: Change) {
        let day = if c.springs() {
            c.at + Duration::days(1)
        } else {
            c.at - Duration::days(1)
        };
        let date = day.with_timezone(&c.tz).date_naive();
        let open = resolve(c.tz, date.and_time(time(12, 0)), Edge::Open);
        let len = secs(120);
        let setup = open - secs(600);
        if setup < t0 + secs(60) || !plain(c.tz, open, len) {
            return;
        }
        let part = self.setup(setup, false);
        let life = Span {
            from: setup + secs(180),
            to: open + len + secs(300),
        };
        let s = Schedule::new(c.tz, &EVERY_DAY, time(12, 0), time(12, 2));
        let label = format!(
            "{ZONES}summer-{}",
            if c.tz == NORTH { "north" } else { "south" }
        );
        self.camp(part, &WINDOW_ZONES, label.clone(), &s, life);
        let probes = [around(open), around(open + len)].concat();
        self.dep(part, &INBOUND_ZONES, label, &s, probes);
    }

    /// Days left out and windows across midnight, in [`DAYS_ZONE`], from the first Thursday
    /// whose 22:30 is 5 minutes ahead or more.
    fn days(&mut self, t0: DateTime<Utc>) {
        let tz = DAYS_ZONE;
        let at = |d: NaiveDate, t: NaiveTime| resolve(tz, d.and_time(t), Edge::Open);
        let mut thu = t0.with_timezone(&tz).date_naive();
        while thu.weekday() != Weekday::Thu || at(thu, time(22, 30)) < t0 + secs(300) {
            thu += Duration::days(1);
        }
        let day = |n: i64| thu + Duration::days(n);
        let setup = at(thu, time(22, 30));
        let part = self.setup(setup, true);
        let start = setup + secs(180);
        let (w0, w1) = (time(22, 0), time(22, 2));
        let weekdays = Schedule::new(tz, &EVERY_DAY[..5], w0, w1);
        let saturday = Schedule::new(tz, &[Weekday::Sat], w0, w1);
        let sunday = Schedule::new(tz, &[Weekday::Sun], w0, w1);
        let any_case = weekdays.clone().any_case();
        // A whole week, Friday to the next Friday: every day is allowed by one schedule and
        // left out by another, so that any name read as another day, or as none, is seen.
        let mut probes = Vec::new();
        for n in 1..=8 {
            probes.extend(around(at(day(n), w0)));
            probes.extend(around(at(day(n), w1)));
        }
        let life = Span {
            from: start,
            to: at(day(8), time(22, 12)),
        };
        for (name, s) in [
            ("weekdays", &weekdays),
            ("saturday", &saturday),
            ("sunday", &sunday),
            ("any-case", &any_case),
        ] {
            let label = format!("{DAYS}{name}");
            self.camp(part, &WINDOW_DAYS, label.clone(), s, life);
            self.dep(part, &INBOUND_DAYS, label, s, probes.clone());
        }
        let night = Schedule::new(tz, &[Weekday::Fri], time(23, 59), time(0, 1));
        let midnight = Schedule::new(tz, &[Weekday::Fri], time(23, 57), time(0, 0));
        // Thursday night (left out) and Friday night.
        let mut probes = Vec::new();
        for n in [0, 1] {
            probes.extend(around(at(day(n), time(23, 57))));
            probes.extend(around(at(day(n), time(23, 59))));
            probes.extend(around(at(day(n + 1), time(0, 0))));
            probes.extend(around(at(day(n + 1), time(0, 1))));
        }
        let life = Span {
            from: start,
            to: at(day(2), time(0, 11)),
        };
        for (name, s) in [("friday", &night), ("midnight", &midnight)] {
            let label = format!("{NIGHT}{name}");
            self.camp(part, &WINDOW_OVERNIGHT, label.clone(), s, life);
            self.dep(part, &INBOUND_OVERNIGHT, label, s, probes.clone());
        }
    }

    /// Windows on the day of the change `c`.
    fn change(&mut self, c: Change) {
        self.changes.push(c);
        let (l0, l1) = c.local_span();
        let m = Duration::minutes(1);
        let every = |a: NaiveDateTime, b: NaiveDateTime| {
            Schedule::new(c.tz, &EVERY_DAY, a.time(), b.time())
        };
        if c.springs() {
            let part = self.setup(c.at - Duration::hours(1), false);
            let life = Span {
                from: c.at - Duration::hours(1) + secs(180),
                to: c.at + Duration::minutes(10),
            };
            let opens = every(l1 - m, l1 + m);
            let closes = every(l0 - m, l0 + m);
            let mut probes = Vec::new();
            for s in [&opens, &closes] {
                for span in s.spans(life) {
                    probes.extend(around(span.from));
                    probes.extend(around(span.to));
                }
            }
            for (name, s) in [("spring-opens", &opens), ("spring-closes", &closes)] {
                let label = format!("{DST}{name}");
                self.camp(part, &WINDOW_DST, label.clone(), s, life);
                self.dep(part, &INBOUND_DST, label, s, probes.clone());
            }
            return;
        }
        let window = every(l0 + m * 30, l0 + m * 45);
        let around_change = Span {
            from: c.at - Duration::hours(6),
            to: c.at + Duration::hours(6),
        };
        let Some(span) = window
            .spans(around_change)
            .into_iter()
            .find(|s| s.contains(c.at))
        else {
            return;
        };
        let part = self.setup(span.from - Duration::hours(1), false);
        let lives = [
            ("fall-opens", span.from - secs(60), span.from + secs(120)),
            ("fall-turns", c.at - secs(60), c.at + secs(60)),
            ("fall-closes", span.to - secs(60), span.to + secs(60)),
        ];
        for (name, from, to) in lives {
            self.camp(
                part,
                &WINDOW_DST,
                format!("{DST}{name}"),
                &window,
                Span { from, to },
            );
        }
        // The campaign across the change stops the clock either side of it.
        let n = self.camps.len();
        self.camps[n - 2].extra.push(c.at);
        let probes = [around(span.from), around(c.at), around(span.to)].concat();
        self.dep(part, &INBOUND_DST, format!("{DST}fall"), &window, probes);
    }
}
