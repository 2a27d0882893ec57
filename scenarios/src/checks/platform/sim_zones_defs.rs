//! What the calling-window checks of the `sim` group share (`sim_zones.rs` runs them): their
//! definitions, what they create, and the oracle they are judged by.
//!
//! The oracle is this file's own reading of a schedule, written from the rows "Calling
//! windows" and "Daylight saving" of `docs/interface.md` on top of the time-zone database
//! (chrono-tz), never the platform's schedule code: on each allowed local date the window
//! opens at the start time and closes at the end time the same day, or the next day when
//! the end is not after the start (`00:00` as the end is midnight); a local time skipped by a
//! clock change is the first instant after the change; a local time that happens twice is
//! the earlier instant for an opening and the later for a closing; windows that touch are
//! one. [`Schedule::spans`] answers the instants a schedule is open; [`next_change`] finds a
//! zone's next daylight-saving change from its rules, so the checks work at whatever date
//! the target's clock shows.

use chrono::{
    DateTime, Datelike, Duration, LocalResult, NaiveDateTime, NaiveTime, Offset, TimeZone, Utc,
    Weekday,
};
use chrono_tz::Tz;
use serde_json::{Value, json};

use super::fixtures::{Kind, Makes, ts};
use crate::checks::CheckDef;

pub(super) const WINDOW_ZONES: CheckDef = CheckDef::error(
    "sim.window_zones",
    "a calling window written in a zone west of UTC (America/Los_Angeles), east of it (Asia/Tokyo), half an hour off the hour (Asia/Kolkata), and in America/New_York and Australia/Sydney on a day their summer time is in effect, opens and closes at those local times: the first dial as it opens, the last just before it closes, none outside; a schedule PATCHed before the campaign starts is the one dialled",
);
pub(super) const WINDOW_DAYS: CheckDef = CheckDef::error(
    "sim.window_days",
    "allowed_days that leave days out (Monday to Friday; Saturday alone; Sunday alone), followed over a whole week, are the zone's weekdays: no dial on a day left out; dialling resumes on the next allowed day as the window opens, the last dial of each day just before it closes; day names in any letter case (`tuesday`, `WEDNESDAY`), when taken, name the same days",
);
pub(super) const WINDOW_OVERNIGHT: CheckDef = CheckDef::warning(
    "sim.window_overnight",
    "a window whose end is before its start runs overnight and belongs to the day it opens (23:59 to 00:01 on Friday: Friday night into Saturday, not Thursday night); 00:00 as the end is midnight (23:57 to 00:00 is dialled up to midnight); a start equal to the end is refused (assumed)",
);
pub(super) const WINDOW_DST: CheckDef = CheckDef::warning(
    "sim.window_dst",
    "on a spring-forward and a fall-back day (one in each hemisphere) a window edge in the skipped hour is the first instant after it; in the repeated hour an opening is the earlier instant, a closing the later (assumed)",
);
pub(super) const INBOUND_ZONES: CheckDef = CheckDef::error(
    "sim.inbound_zones",
    "an inbound_config in America/Los_Angeles, Asia/Tokyo and Asia/Kolkata, and in America/New_York and Australia/Sydney on a day their summer time is in effect, answers from its local start to its local end: not 1 s before and yes 1 s after it opens, yes 1 s before and not 1 s after it closes; an inbound_config PATCHed to another is the one answered by, and PATCHed to null answers at every instant",
);
pub(super) const INBOUND_DAYS: CheckDef = CheckDef::error(
    "sim.inbound_days",
    "an inbound_config whose allowed_days leave days out (Monday to Friday; Saturday alone; Sunday alone) answers on the zone's allowed days only, 1 s either side of each opening and closing over a whole week; day names in any letter case, when taken, name the same days",
);
pub(super) const INBOUND_OVERNIGHT: CheckDef = CheckDef::warning(
    "sim.inbound_overnight",
    "an inbound_config whose end is before its start answers overnight from the day it opens, not into it from the day before; 00:00 as the end is midnight; a start equal to the end is refused (assumed)",
);
pub(super) const INBOUND_DST: CheckDef = CheckDef::warning(
    "sim.inbound_dst",
    "an inbound_config on a spring-forward and a fall-back day answers from and to the instants the daylight-saving rule gives, 1 s either side of each, and across the change (assumed)",
);

/// The checks of this part, in table order.
pub(super) const CHECKS: [&CheckDef; 8] = [
    &WINDOW_ZONES,
    &WINDOW_DAYS,
    &WINDOW_OVERNIGHT,
    &WINDOW_DST,
    &INBOUND_ZONES,
    &INBOUND_DAYS,
    &INBOUND_OVERNIGHT,
    &INBOUND_DST,
];

/// The checks judged from campaigns' dials.
pub(super) const CAMPAIGN_CHECKS: [&CheckDef; 4] =
    [&WINDOW_ZONES, &WINDOW_DAYS, &WINDOW_OVERNIGHT, &WINDOW_DST];

/// The labels of what each part creates (a campaign and its cohort share a name).
pub(super) const ZONES: &str = "tz-zone-";
pub(super) const DAYS: &str = "tz-days-";
pub(super) const NIGHT: &str = "tz-night-";
pub(super) const DST: &str = "tz-dst-";

/// What each check creates: the campaigns with their cohorts (one each, of the same name),
/// the deployments.
pub(super) const ZONE_CAMPAIGNS: [Makes; 2] = [
    Makes::new(Kind::Campaign, ZONES, 6),
    Makes::new(Kind::Cohort, ZONES, 6),
];
pub(super) const DAY_CAMPAIGNS: [Makes; 2] = [
    Makes::new(Kind::Campaign, DAYS, 4),
    Makes::new(Kind::Cohort, DAYS, 4),
];
pub(super) const NIGHT_CAMPAIGNS: [Makes; 2] = [
    Makes::new(Kind::Campaign, NIGHT, 2),
    Makes::new(Kind::Cohort, NIGHT, 2),
];
pub(super) const DST_CAMPAIGNS: [Makes; 2] = [
    Makes::new(Kind::Campaign, DST, 5),
    Makes::new(Kind::Cohort, DST, 5),
];
pub(super) const ZONE_DEPLOYMENTS: [Makes; 1] = [Makes::new(Kind::Deployment, ZONES, 7)];
pub(super) const DAY_DEPLOYMENTS: [Makes; 1] = [Makes::new(Kind::Deployment, DAYS, 4)];
pub(super) const NIGHT_DEPLOYMENTS: [Makes; 1] = [Makes::new(Kind::Deployment, NIGHT, 2)];
pub(super) const DST_DEPLOYMENTS: [Makes; 1] = [Makes::new(Kind::Deployment, DST, 3)];

/// The dial rate of every campaign of this part: a dial every 9.09 s, so that no dial falls
/// within a second of a window's edge when the window is a whole number of minutes long.
pub(super) const RATE: f64 = 0.11;

/// The time between two dials at [`RATE`].
pub(super) fn period() -> Duration {
    Duration::microseconds((1e6 / RATE) as i64)
}

/// The zone west of UTC, the one east of it, the one half an hour off the hour.
pub(super) const WEST: Tz = chrono_tz::America::Los_Angeles;
pub(super) const EAST: Tz = chrono_tz::Asia::Tokyo;
pub(super) const HALF_HOUR: Tz = chrono_tz::Asia::Kolkata;
/// The zone of the days and overnight windows (west of UTC, no daylight saving: its 22:00
/// is the next day in UTC, so a platform that takes the weekday in UTC is seen).
pub(super) const DAYS_ZONE: Tz = chrono_tz::America::Sao_Paulo;
/// The daylight-saving zones: one in each hemisphere.
pub(super) const NORTH: Tz = chrono_tz::America::New_York;
pub(super) const SOUTH: Tz = chrono_tz::Australia::Sydney;

/// A weekday as the contract spells it (its own table: not the platform's).
pub(super) fn day_name(d: Weekday) -> &'static str {
    match d {
        Weekday::Mon => "Monday",
        Weekday::Tue => "Tuesday",
        Weekday::Wed => "Wednesday",
        Weekday::Thu => "Thursday",
        Weekday::Fri => "Friday",
        Weekday::Sat => "Saturday",
        Weekday::Sun => "Sunday",
    }
}

/// Every weekday, Monday first.
pub(super) const EVERY_DAY: [Weekday; 7] = [
    Weekday::Mon,
    Weekday::Tue,
    Weekday::Wed,
    Weekday::Thu,
    Weekday::Fri,
    Weekday::Sat,
    Weekday::Sun,
];

/// Instants from `from` (inside) to `to` (outside), UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Span {
    pub(super) from: DateTime<Utc>,
    pub(super) to: DateTime<Utc>,
}

impl Span {
    pub(super) fn contains(&self, t: DateTime<Utc>) -> bool {
        self.from <= t && t < self.to
    }

    /// The part of it inside `other`, if any.
    pub(super) fn within(&self, other: Span) -> Option<Span> {
        let s = Span {
            from: self.from.max(other.from),
            to: self.to.min(other.to),
        };
        (s.from < s.to).then_some(s)
    }

    pub(super) fn seconds(&self) -> f64 {
        (self.to - self.from).as_seconds_f64()
    }

    /// `{from, to}` as evidence, with the local times in `tz`.
    pub(super) fn to_value(self, tz: Tz) -> Value {
        json!({"from": ts(self.from), "to": ts(self.to), "local": format!("{} to {}", local(tz, self.from), local(tz, self.to))})
    }
}

/// An instant as the wall clock of `tz` shows it: `2026-03-08 03:00:00 EDT (Sunday)`.
pub(super) fn local(tz: Tz, t: DateTime<Utc>) -> String {
    let l = t.with_timezone(&tz);
    format!(
        "{} ({})",
        l.format("%Y-%m-%d %H:%M:%S %Z"),
        day_name(l.weekday())
    )
}

/// Which edge of a window a local time is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Edge {
    Open,
    Close,
}

/// The instant a local time of `tz` stands for as the `edge` of a window: the one instant
/// it names; in a gap, the first instant after the gap (the zones change offsets on whole
/// minutes, so that is the first whole local minute that exists); when it happens twice,
/// the earlier for an opening, the later for a closing.
pub(super) fn resolve(tz: Tz, at: NaiveDateTime, edge: Edge) -> DateTime<Utc> {
    match tz.from_local_datetime(&at) {
        LocalResult::Single(t) => t.with_timezone(&Utc),
        LocalResult::Ambiguous(a, b) => {
            let (a, b) = (a.with_timezone(&Utc), b.with_timezone(&Utc));
            match edge {
                Edge::Open => a.min(b),
                Edge::Close => a.max(b),
            }
        }
        LocalResult::None => {
            let mut m = at;
            for _ in 0..(48 * 60) {
                m += Duration::minutes(1);
                if let Some(t) = tz.from_local_datetime(&m).earliest() {
                    return t.with_timezone(&Utc);
                }
            }
            Utc.from_utc_datetime(&at)
        }
    }
}

/// A schedule as a user writes it: a zone, the allowed weekdays, a start and an end time.
#[derive(Clone, Debug)]
pub(super) struct Schedule {
    pub(super) tz: Tz,
    pub(super) days: Vec<Weekday>,
    pub(super) start: NaiveTime,
    pub(super) end: NaiveTime,
    /// The day names written in every letter case (`Monday`, `tuesday`, `WEDNESDAY`, ...), as
    /// the record takes them.
    pub(super) any_case: bool,
    /// No schedule at all (a deployment's `inbound_config: null`): open at every instant.
    pub(super) none: bool,
}

impl Schedule {
    pub(super) fn new(tz: Tz, days: &[Weekday], start: NaiveTime, end: NaiveTime) -> Schedule {
        Schedule {
            tz,
            days: days.to_vec(),
            start,
            end,
            any_case: false,
            none: false,
        }
    }

    /// The same schedule with its day names written in every letter case in turn.
    pub(super) fn any_case(mut self) -> Schedule {
        self.any_case = true;
        self
    }

    /// No schedule (in `tz` for the evidence's local times): open at every instant.
    pub(super) fn none(tz: Tz) -> Schedule {
        let mut s = Schedule::new(tz, &EVERY_DAY, NaiveTime::MIN, NaiveTime::MIN);
        s.none = true;
        s
    }

    fn day_names(&self) -> Vec<String> {
        self.days
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let n = day_name(*d);
                match (self.any_case, i % 3) {
                    (true, 1) => n.to_lowercase(),
                    (true, 2) => n.to_uppercase(),
                    _ => n.to_string(),
                }
            })
            .collect()
    }

    /// As a campaign's `allowed_schedule`.
    pub(super) fn allowed_schedule(&self) -> Value {
        json!({
            "timezone": self.tz.name(),
            "allowed_days": self.day_names(),
            "allowed_start_time": hm(self.start),
            "allowed_end_time": hm(self.end),
        })
    }

    /// As a deployment's `inbound_config` (`null` for none).
    pub(super) fn inbound_config(&self) -> Value {
        if self.none {
            return Value::Null;
        }
        json!({
            "start_time": hm(self.start),
            "end_time": hm(self.end),
            "allowed_days": self.day_names(),
            "timezone": self.tz.name(),
        })
    }

    /// `America/Sao_Paulo 23:59 to 00:01, Friday`.
    pub(super) fn describe(&self) -> String {
        if self.none {
            return "none (open at every instant)".into();
        }
        let days = if self.days.len() == 7 && !self.any_case {
            "every day".to_string()
        } else {
            self.day_names().join(", ")
        };
        format!(
            "{} {} to {}, {days}",
            self.tz.name(),
            hm(self.start),
            hm(self.end)
        )
    }

    /// The spans it is open that meet `within`, whole (windows that touch or overlap
    /// joined).
    pub(super) fn spans(&self, within: Span) -> Vec<Span> {
        if self.none {
            return vec![within];
        }
        let first = within.from.with_timezone(&self.tz).date_naive() - Duration::days(2);
        let last = within.to.with_timezone(&self.tz).date_naive() + Duration::days(1);
        let mut all: Vec<Span> = Vec::new();
        let mut d = first;
        while d <= last {
            if self.days.contains(&d.weekday()) {
                let from = resolve(self.tz, d.and_time(self.start), Edge::Open);
                let close_day = if self.end > self.start {
                    d
                } else {
                    d + Duration::days(1)
                };
                let to = resolve(self.tz, close_day.and_time(self.end), Edge::Close);
                if to > from {
                    all.push(Span { from, to });
                }
            }
            d += Duration::days(1);
        }
        all.sort_by_key(|s| s.from);
        let mut joined: Vec<Span> = Vec::new();
        for s in all {
            match joined.last_mut() {
                Some(l) if s.from <= l.to => l.to = l.to.max(s.to),
                _ => joined.push(s),
            }
        }
        joined.retain(|s| s.within(within).is_some());
        joined
    }

    /// Whether it is open at `t`.
    pub(super) fn contains(&self, t: DateTime<Utc>) -> bool {
        let around = Span {
            from: t - Duration::days(1),
            to: t + Duration::days(1),
        };
        self.spans(around).iter().any(|s| s.contains(t))
    }
}

/// `HH:MM`.
pub(super) fn hm(t: NaiveTime) -> String {
    t.format("%H:%M").to_string()
}

/// The local time `at` of `tz` with the seconds dropped.
pub(super) fn minute_of(tz: Tz, at: DateTime<Utc>) -> NaiveTime {
    let t = at.with_timezone(&tz).time();
    NaiveTime::from_hms_opt(chrono::Timelike::hour(&t), chrono::Timelike::minute(&t), 0)
        .unwrap_or(t)
}

/// A change of a zone's offset from UTC.
#[derive(Clone, Copy, Debug)]
pub(super) struct Change {
    pub(super) tz: Tz,
    /// The first instant of the new offset.
    pub(super) at: DateTime<Utc>,
    /// The offsets before and after, in seconds east of UTC.
    pub(super) before: i32,
    pub(super) after: i32,
}

impl Change {
    /// Whether the clocks spring forward (a local hour is skipped).
    pub(super) fn springs(&self) -> bool {
        self.after > self.before
    }

    /// The local times skipped (spring) or repeated (fall): from (inside) to (outside).
    pub(super) fn local_span(&self) -> (NaiveDateTime, NaiveDateTime) {
        let at = self.at.naive_utc();
        let a = at + Duration::seconds(i64::from(self.before));
        let b = at + Duration::seconds(i64::from(self.after));
        (a.min(b), a.max(b))
    }

    /// `America/New_York springs forward at 2026-03-08T07:00:00.000Z (02:00 to 03:00)`.
    pub(super) fn describe(&self) -> String {
        let (a, b) = self.local_span();
        format!(
            "{} {} at {} (local {} to {} {})",
            self.tz.name(),
            if self.springs() {
                "springs forward"
            } else {
                "falls back"
            },
            ts(self.at),
            a.format("%H:%M"),
            b.format("%H:%M"),
            if self.springs() {
                "skipped"
            } else {
                "repeated"
            }
        )
    }
}

fn offset(tz: Tz, t: DateTime<Utc>) -> i32 {
    tz.offset_from_utc_datetime(&t.naive_utc())
        .fix()
        .local_minus_utc()
}

/// The first change of `tz` after `from` (within 400 days) that springs forward when
/// `springs`, else falls back; found from the zone's rules, to the second.
pub(super) fn next_change(tz: Tz, from: DateTime<Utc>, springs: bool) -> Option<Change> {
    let day = Duration::days(1);
    let mut t = Utc.timestamp_opt(from.timestamp(), 0).single()?;
    for _ in 0..400 {
        let (before, after) = (offset(tz, t), offset(tz, t + day));
        if before != after {
            let (mut lo, mut hi) = (t, t + day);
            while hi - lo > Duration::seconds(1) {
                let mid = lo + Duration::seconds((hi - lo).num_seconds() / 2);
                if offset(tz, mid) == before {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            let c = Change {
                tz,
                at: hi,
                before,
                after,
            };
            if c.springs() == springs {
                return Some(c);
            }
        }
        t += day;
    }
    None
}

/// The nearest pair of a spring-forward and a fall-back change after `from`, one in each
/// hemisphere ([`NORTH`] and [`SOUTH`]), earlier first.
pub(super) fn dst_pair(from: DateTime<Utc>) -> Option<[Change; 2]> {
    let options = [
        (
            next_change(NORTH, from, true),
            next_change(SOUTH, from, false),
        ),
        (
            next_change(SOUTH, from, true),
            next_change(NORTH, from, false),
        ),
    ];
    options
        .into_iter()
        .filter_map(|(a, b)| Some((a?, b?)))
        .min_by_key(|(a, b)| a.at.max(b.at))
        .map(|(a, b)| if a.at <= b.at { [a, b] } else { [b, a] })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn hhmm(s: &str) -> NaiveTime {
        NaiveTime::parse_from_str(s, "%H:%M").unwrap()
    }

    fn spans(s: &Schedule, from: &str, to: &str) -> Vec<(String, String)> {
        s.spans(Span {
            from: at(from),
            to: at(to),
        })
        .iter()
        .map(|x| (ts(x.from), ts(x.to)))
        .collect()
    }

    fn pair(a: &str, b: &str) -> (String, String) {
        (a.to_string(), b.to_string())
    }

    #[test]
    fn the_changes_are_found_from_the_zone_rules() {
        let c = next_change(NORTH, at("2026-03-02T08:00:00Z"), true).unwrap();
        assert_eq!(ts(c.at), "2026-03-08T07:00:00.000Z");
        assert_eq!((c.before, c.after), (-5 * 3600, -4 * 3600));
        let f = next_change(SOUTH, at("2026-03-02T08:00:00Z"), false).unwrap();
        assert_eq!(ts(f.at), "2026-04-04T16:00:00.000Z");
        assert_eq!(
            f.local_span(),
            (
                "2026-04-05T02:00:00".parse().unwrap(),
                "2026-04-05T03:00:00".parse().unwrap()
            )
        );
        // From March: New York's spring and Sydney's autumn; from May: Sydney's spring and
        // New York's autumn.
        let [a, b] = dst_pair(at("2026-03-02T08:00:00Z")).unwrap();
        assert_eq!((a.tz, b.tz), (NORTH, SOUTH));
        let [a, b] = dst_pair(at("2026-05-01T00:00:00Z")).unwrap();
        assert_eq!(
            (ts(a.at), ts(b.at)),
            (
                "2026-10-03T16:00:00.000Z".into(),
                "2026-11-01T06:00:00.000Z".into()
            )
        );
    }

    #[test]
    fn the_oracle_reads_windows_as_recorded() {
        let ny = |a: &str, b: &str| Schedule::new(NORTH, &EVERY_DAY, hhmm(a), hhmm(b));
        // Spring forward (02:00 -> 03:00): an edge in the gap is the first instant after it.
        assert_eq!(
            spans(
                &ny("02:59", "03:01"),
                "2026-03-08T05:00:00Z",
                "2026-03-08T09:00:00Z"
            ),
            [pair("2026-03-08T07:00:00.000Z", "2026-03-08T07:01:00.000Z")]
        );
        assert_eq!(
            spans(
                &ny("01:59", "02:01"),
                "2026-03-08T05:00:00Z",
                "2026-03-08T09:00:00Z"
            ),
            [pair("2026-03-08T06:59:00.000Z", "2026-03-08T07:00:00.000Z")]
        );
        // Fall back (02:00 EDT -> 01:00 EST): opening earlier, closing later.
        assert_eq!(
            spans(
                &ny("01:30", "01:45"),
                "2026-11-01T04:00:00Z",
                "2026-11-01T08:00:00Z"
            ),
            [pair("2026-11-01T05:30:00.000Z", "2026-11-01T06:45:00.000Z")]
        );
        // Overnight, on the day it opens; 00:00 as the end is midnight.
        let sp = |a: &str, b: &str| Schedule::new(DAYS_ZONE, &[Weekday::Fri], hhmm(a), hhmm(b));
        assert_eq!(
            spans(
                &sp("23:59", "00:01"),
                "2026-03-05T00:00:00Z",
                "2026-03-08T00:00:00Z"
            ),
            [pair("2026-03-07T02:59:00.000Z", "2026-03-07T03:01:00.000Z")]
        );
        assert_eq!(
            spans(
                &sp("23:59", "00:00"),
                "2026-03-05T00:00:00Z",
                "2026-03-08T00:00:00Z"
            ),
            [pair("2026-03-07T02:59:00.000Z", "2026-03-07T03:00:00.000Z")]
        );
        // Half an hour off the hour.
        let k = Schedule::new(HALF_HOUR, &EVERY_DAY, hhmm("13:40"), hhmm("13:42"));
        assert!(k.contains(at("2026-03-02T08:10:01Z")));
        assert!(!k.contains(at("2026-03-02T08:09:59Z")));
        assert!(!k.contains(at("2026-03-02T08:12:00Z")));
        assert_eq!(
            k.allowed_schedule()["allowed_days"][6],
            json!("Sunday"),
            "weekdays as the contract spells them"
        );
    }

    #[test]
    fn names_in_every_case_and_no_schedule_read_as_recorded() {
        let s = Schedule::new(DAYS_ZONE, &EVERY_DAY[..5], hhmm("22:00"), hhmm("22:02")).any_case();
        assert_eq!(
            s.inbound_config()["allowed_days"],
            json!(["Monday", "tuesday", "WEDNESDAY", "Thursday", "friday"])
        );
        // The same days: Tuesday 22:01 in Sao Paulo is open, Saturday's is not.
        assert!(s.contains(at("2026-03-04T01:01:00Z")));
        assert!(!s.contains(at("2026-03-08T01:01:00Z")));
        let none = Schedule::none(EAST);
        assert_eq!(none.inbound_config(), Value::Null);
        assert!(none.contains(at("2026-03-08T01:01:00Z")));
        assert_eq!(none.describe(), "none (open at every instant)");
    }
}
