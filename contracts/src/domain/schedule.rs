//! Calling windows: when a campaign may dial and when a deployment answers.
//!
//! A campaign's `allowed_schedule` and a deployment's `inbound_config` both name an IANA time
//! zone, a set of weekdays and a start and end time of day. This module parses those parts
//! ([`TimeOfDay`], [`parse_weekday`], [`parse_timezone`], [`WeekdaySet`]) and joins them into a
//! [`CallingWindow`], which answers the questions the campaign engine and inbound routing ask:
//! is this instant inside ([`CallingWindow::contains`]), when does the window next open
//! ([`CallingWindow::next_open`]), when does the current window close
//! ([`CallingWindow::current_close`]), and how many seconds is it open over a span
//! ([`CallingWindow::open_seconds_between`], the dial budget is `rate x open seconds`).
//!
//! Every function takes the instant as a parameter; nothing here reads a clock.
//!
//! # Semantics (recorded in the interface document as *assumed*)
//!
//! - **Opening day.** On each local date `D` whose weekday is allowed, the window opens at
//!   local time `D start`. The opening day is the one that must be allowed.
//! - **Same-day and overnight windows.** If `end > start` the window closes at `D end`, the
//!   same day. If `end < start` it is an *overnight* window and closes at `(D+1) end`, so
//!   `22:00`-`06:00` allowed on Friday runs from Friday 22:00 to Saturday 06:00 even when
//!   Saturday is not allowed, and `end = 00:00` means "until midnight". `start == end` is
//!   refused.
//! - **Half-open.** An instant exactly at the opening is inside; one exactly at the closing is
//!   outside.
//! - **Daylight saving, gap.** A local time that does not exist (the hour skipped when clocks
//!   spring forward) resolves to the first instant after the gap. A window that lies wholly
//!   inside a gap is empty that day.
//! - **Daylight saving, overlap.** A local time that occurs twice (the hour repeated when
//!   clocks fall back) resolves to the earlier instant when it opens a window and to the later
//!   instant when it closes one, so the window covers every wall-clock minute between start
//!   and end: on the fall-back day a `01:00`-`02:00` window is open for two hours.
//! - **Touching days.** When the window of one day reaches or overlaps the window of the next
//!   (possible only around a clock change), the two count as one continuous window: an instant
//!   is never counted twice, and [`CallingWindow::current_close`] gives the end of the whole
//!   run.
//!
//! Put differently: a window opens at the first instant at which the local wall clock shows
//! `start` or later, and closes at the last instant at which the wall clock reaches `end`
//! (after which it never again shows an earlier time).

use std::fmt;
use std::iter::Peekable;
use std::str::FromStr;

use chrono::{
    DateTime, Datelike, Days, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeDelta,
    TimeZone, Utc, Weekday,
};
use chrono_tz::Tz;
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

mod memo;

/// Why a schedule value was refused. Every message names the offending input and says what
/// would be accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// A time of day that is not strict `HH:MM` between `00:00` and `23:59`.
    #[error(
        "'{0}' is not a time of day: write it as HH:MM on the 24-hour clock, from 00:00 to 23:59"
    )]
    InvalidTimeOfDay(String),
    /// A weekday that is not a full English name.
    #[error("'{0}' is not a weekday: use a full English name such as 'Monday'")]
    UnknownWeekday(String),
    /// A time zone that is not in the IANA database.
    #[error("unknown IANA time zone '{name}'; {}", timezone_hint(*.suggestion))]
    UnknownTimeZone {
        /// The name as given.
        name: String,
        /// The correctly spelled name when the given one differs from it only in case or
        /// surrounding spaces.
        suggestion: Option<&'static str>,
    },
    /// A window with no allowed day would never open.
    #[error("a calling window needs at least one allowed day")]
    NoAllowedDays,
    /// A window whose start equals its end: empty, or ambiguous with "all day".
    #[error(
        "the calling window starts and ends at {0}; give an end time after the start time, or \
         before it for an overnight window (for example 22:00 to 06:00)"
    )]
    StartEqualsEnd(TimeOfDay),
}

fn timezone_hint(suggestion: Option<&str>) -> String {
    match suggestion {
        Some(name) => format!("did you mean '{name}'?"),
        None => "use a name such as 'America/New_York'".to_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// Time of day
// ---------------------------------------------------------------------------------------------

/// The strict `HH:MM` form a [`TimeOfDay`] is read from, as a regular expression.
pub const TIME_OF_DAY_PATTERN: &str = "^([01][0-9]|2[0-3]):[0-5][0-9]$";

/// Every time-zone name [`parse_timezone`] accepts, in the order of the time-zone database.
pub fn timezone_names() -> impl Iterator<Item = &'static str> {
    chrono_tz::TZ_VARIANTS.iter().map(|tz| tz.name())
}

/// A wall-clock time of day with minute precision, from `00:00` to `23:59`.
///
/// The wire form (the `start_time`/`end_time` and `allowed_start_time`/`allowed_end_time`
/// fields) is strict `HH:MM`: exactly two digits for the hour (`00` to `23`) and two for the
/// minute (`00` to `59`). `9:00`, `0900` and `24:00` are refused. [`Display`](fmt::Display) and
/// serde write the same form back.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimeOfDay {
    /// Minutes since midnight, always below 1440.
    minutes: u16,
}

impl TimeOfDay {
    /// Midnight, `00:00`. As a window's end it means "until midnight".
    pub const MIDNIGHT: TimeOfDay = TimeOfDay { minutes: 0 };

    /// The time `hour:minute`, or `None` unless `hour < 24` and `minute < 60`.
    pub fn new(hour: u32, minute: u32) -> Option<Self> {
        (hour < 24 && minute < 60).then(|| TimeOfDay {
            // Below 1440, so it fits.
            minutes: (hour * 60 + minute) as u16,
        })
    }

    /// The hour, 0 to 23.
    pub(crate) fn hour(self) -> u32 {
        self.minutes() / 60
    }

    /// The minute within the hour, 0 to 59.
    pub(crate) fn minute(self) -> u32 {
        self.minutes() % 60
    }

    /// Minutes since midnight, 0 to 1439.
    pub(crate) fn minutes(self) -> u32 {
        u32::from(self.minutes)
    }

    /// The same time as a chrono [`NaiveTime`] (seconds are zero).
    pub(crate) fn to_naive_time(self) -> NaiveTime {
        NaiveTime::MIN + TimeDelta::minutes(i64::from(self.minutes))
    }
}

impl FromStr for TimeOfDay {
    type Err = ScheduleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = || ScheduleError::InvalidTimeOfDay(s.to_owned());
        let &[h1, h2, b':', m1, m2] = s.as_bytes() else {
            return Err(invalid());
        };
        let digit = |b: u8| b.is_ascii_digit().then(|| u32::from(b - b'0'));
        match (digit(h1), digit(h2), digit(m1), digit(m2)) {
            (Some(h1), Some(h2), Some(m1), Some(m2)) => {
                TimeOfDay::new(h1 * 10 + h2, m1 * 10 + m2).ok_or_else(invalid)
            }
            _ => Err(invalid()),
        }
    }
}

impl fmt::Display for TimeOfDay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02}:{:02}", self.hour(), self.minute())
    }
}

impl fmt::Debug for TimeOfDay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TimeOfDay({self})")
    }
}

impl Serialize for TimeOfDay {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TimeOfDay {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TimeOfDayVisitor;

        impl Visitor<'_> for TimeOfDayVisitor {
            type Value = TimeOfDay;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a time of day as an \"HH:MM\" string")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<TimeOfDay, E> {
                v.parse().map_err(E::custom)
            }
        }

        deserializer.deserialize_str(TimeOfDayVisitor)
    }
}

// ---------------------------------------------------------------------------------------------
// Weekdays and time zones
// ---------------------------------------------------------------------------------------------

/// The seven days, Monday first (the order of [`WeekdaySet::iter`]).
const WEEK: [Weekday; 7] = [
    Weekday::Mon,
    Weekday::Tue,
    Weekday::Wed,
    Weekday::Thu,
    Weekday::Fri,
    Weekday::Sat,
    Weekday::Sun,
];

/// The canonical wire name of a weekday: `Monday` ... `Sunday`.
pub fn weekday_name(d: Weekday) -> &'static str {
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

/// Parses a weekday from its full English name in any letter case (`Monday`, `monday`,
/// `MONDAY`). Abbreviations (`Mon`) and surrounding spaces are refused.
pub(crate) fn parse_weekday(s: &str) -> Result<Weekday, ScheduleError> {
    WEEK.into_iter()
        .find(|d| weekday_name(*d).eq_ignore_ascii_case(s))
        .ok_or_else(|| ScheduleError::UnknownWeekday(s.to_owned()))
}

/// Parses an IANA time-zone name (`America/New_York`, `Asia/Kolkata`, `UTC`), spelled exactly
/// as in the time-zone database.
///
/// A name that matches only when letter case and surrounding spaces are ignored is still
/// refused, but the error suggests the correct spelling.
pub(crate) fn parse_timezone(s: &str) -> Result<Tz, ScheduleError> {
    s.parse::<Tz>().map_err(|_| {
        let wanted = s.trim();
        let suggestion = chrono_tz::TZ_VARIANTS
            .iter()
            .map(|tz| tz.name())
            .find(|name| name.eq_ignore_ascii_case(wanted));
        ScheduleError::UnknownTimeZone {
            name: s.to_owned(),
            suggestion,
        }
    })
}

/// A set of weekdays, stored as seven bits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct WeekdaySet {
    /// Bit `n` is the day `n` days after Monday.
    bits: u8,
}

impl WeekdaySet {
    /// The set with no day.
    pub const EMPTY: WeekdaySet = WeekdaySet { bits: 0 };
    /// All seven days.
    pub const ALL: WeekdaySet = WeekdaySet { bits: 0x7f };

    fn bit(d: Weekday) -> u8 {
        1 << d.num_days_from_monday()
    }

    /// The set of the given days; repeats are ignored.
    pub(crate) fn from_days(days: impl IntoIterator<Item = Weekday>) -> Self {
        WeekdaySet {
            bits: days.into_iter().fold(0, |bits, d| bits | Self::bit(d)),
        }
    }

    /// Whether `d` is in the set.
    pub(crate) fn contains(self, d: Weekday) -> bool {
        self.bits & Self::bit(d) != 0
    }

    /// Whether the set has no day.
    pub(crate) fn is_empty(self) -> bool {
        self.bits == 0
    }

    /// The number of days in the set, 0 to 7.
    #[cfg(test)]
    pub(crate) fn len(self) -> usize {
        self.bits.count_ones() as usize
    }

    /// The days in the set, Monday first.
    pub(crate) fn iter(self) -> WeekdaySetIter {
        WeekdaySetIter { set: self, next: 0 }
    }
}

impl FromIterator<Weekday> for WeekdaySet {
    fn from_iter<I: IntoIterator<Item = Weekday>>(iter: I) -> Self {
        WeekdaySet::from_days(iter)
    }
}

impl IntoIterator for WeekdaySet {
    type Item = Weekday;
    type IntoIter = WeekdaySetIter;

    fn into_iter(self) -> WeekdaySetIter {
        self.iter()
    }
}

impl fmt::Debug for WeekdaySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.iter().map(weekday_name))
            .finish()
    }
}

/// The days of a [`WeekdaySet`], Monday first.
#[derive(Debug, Clone)]
pub struct WeekdaySetIter {
    set: WeekdaySet,
    /// Index into [`WEEK`] of the next day to look at.
    next: usize,
}

impl Iterator for WeekdaySetIter {
    type Item = Weekday;

    fn next(&mut self) -> Option<Weekday> {
        while let Some(&d) = WEEK.get(self.next) {
            self.next += 1;
            if self.set.contains(d) {
                return Some(d);
            }
        }
        None
    }
}

// ---------------------------------------------------------------------------------------------
// Calling window
// ---------------------------------------------------------------------------------------------

/// An open interval `[open, close)` of the window, in UTC.
type Interval = (DateTime<Utc>, DateTime<Utc>);

/// The weekly business-hours window inside which calls are placed (campaigns) or answered
/// (deployments): a time zone, the allowed days, and a start and end time of day.
///
/// The exact meaning, including overnight windows and daylight-saving changes, is in the
/// [module documentation](self). In short: on each allowed local date the window is open from
/// `start` until `end` (until `end` the next day when `end <= start`), as half-open intervals
/// of real time.
///
/// The queries look only at the few local dates around the instant they are given (a handful
/// of time-zone lookups), so they are cheap enough for the campaign engine's dial loop.
/// [`open_seconds_between`](Self::open_seconds_between) and
/// [`windows_between`](Self::windows_between) cost one step per local date in the span.
///
/// Its serde form (`{"timezone", "days", "start", "end"}`, days by full English name) is how
/// stored models keep it; reading it back checks only what [`CallingWindow::new`] checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "WindowForm", into = "WindowForm")]
pub struct CallingWindow {
    timezone: Tz,
    days: WeekdaySet,
    start: TimeOfDay,
    end: TimeOfDay,
}

/// The serde form of a [`CallingWindow`].
#[derive(Serialize, Deserialize)]
struct WindowForm {
    timezone: String,
    days: Vec<String>,
    start: TimeOfDay,
    end: TimeOfDay,
}

impl From<CallingWindow> for WindowForm {
    fn from(w: CallingWindow) -> Self {
        WindowForm {
            timezone: w.timezone.name().to_owned(),
            days: w.days.iter().map(|d| weekday_name(d).to_owned()).collect(),
            start: w.start,
            end: w.end,
        }
    }
}

impl TryFrom<WindowForm> for CallingWindow {
    type Error = ScheduleError;

    fn try_from(f: WindowForm) -> Result<Self, ScheduleError> {
        let days = f
            .days
            .iter()
            .map(|d| parse_weekday(d))
            .collect::<Result<WeekdaySet, _>>()?;
        CallingWindow::new(parse_timezone(&f.timezone)?, days, f.start, f.end)
    }
}

impl CallingWindow {
    /// A window open on `days` from `start` to `end`, local time in `timezone`.
    ///
    /// An `end` before `start` makes an overnight window (see [`Self::is_overnight`]).
    /// Refused: an empty `days` ([`ScheduleError::NoAllowedDays`]) and `start == end`
    /// ([`ScheduleError::StartEqualsEnd`]).
    pub fn new(
        timezone: Tz,
        days: WeekdaySet,
        start: TimeOfDay,
        end: TimeOfDay,
    ) -> Result<Self, ScheduleError> {
        if days.is_empty() {
            return Err(ScheduleError::NoAllowedDays);
        }
        if start == end {
            return Err(ScheduleError::StartEqualsEnd(start));
        }
        Ok(CallingWindow {
            timezone,
            days,
            start,
            end,
        })
    }

    /// The time zone in which `start`, `end` and the days are read.
    pub fn timezone(&self) -> Tz {
        self.timezone
    }

    /// The days on which the window opens.
    pub(crate) fn days(&self) -> WeekdaySet {
        self.days
    }

    /// The local time at which the window opens.
    pub(crate) fn start(&self) -> TimeOfDay {
        self.start
    }

    /// The local time at which the window closes.
    pub(crate) fn end(&self) -> TimeOfDay {
        self.end
    }

    /// Whether the window closes on the day after it opens (`end` before `start`, which
    /// includes an `end` of `00:00`, "until midnight").
    pub fn is_overnight(&self) -> bool {
        self.end < self.start
    }

    /// Whether `t` is inside the window: at or after an opening and before the matching
    /// closing.
    pub fn contains(&self, t: DateTime<Utc>) -> bool {
        self.first_interval_ending_after(t)
            .is_some_and(|(open, _)| open <= t)
    }

    /// `t` itself when the window contains it, otherwise the first opening after `t`.
    ///
    /// # Panics
    ///
    /// Only when no opening is representable after `t` (near the end of chrono's range,
    /// about the year 262,000).
    pub fn next_open(&self, t: DateTime<Utc>) -> DateTime<Utc> {
        let (open, _) = self
            .first_interval_ending_after(t)
            .expect("a calling window with an allowed day opens again within chrono's range");
        open.max(t)
    }

    /// The instant at which the window that contains `t` closes, or `None` when `t` is
    /// outside. When the next day's window begins at or before that closing (possible only
    /// around a clock change), the two are one window and this is the later closing.
    pub fn current_close(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let (open, close) = Merged::new(self.intervals_ending_after(t)).next()?;
        (open <= t).then_some(close)
    }

    /// The whole seconds inside the window within `[from, to)`; 0 when `to <= from`.
    ///
    /// This is the exact length of the union of the open intervals within the span,
    /// truncated to whole seconds. A dial budget is `attempts_per_second` times this.
    pub fn open_seconds_between(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> i64 {
        self.windows(from, to)
            .map(|(open, close)| close - open)
            .sum::<TimeDelta>()
            .num_seconds()
    }

    /// The open intervals of the window intersected with `[from, to)`, in order, each
    /// half-open `(open, close)` with `open < close`. Intervals that touch or overlap (around
    /// a clock change) are merged, so consecutive entries are separated by a closed stretch.
    /// Empty when `to <= from`.
    pub fn windows_between(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
        self.windows(from, to).collect()
    }

    fn windows(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> impl Iterator<Item = Interval> {
        let intervals = (from < to).then(|| self.intervals_ending_after(from));
        Merged::new(intervals.into_iter().flatten())
            .take_while(move |&(open, _)| open < to)
            .map(move |(open, close)| (open.max(from), close.min(to)))
    }

    /// The first non-empty day interval that closes after `t`. Since openings and closings
    /// both grow with the date, `t` is inside the window exactly when this interval has
    /// opened by `t`, and otherwise its opening is the next one.
    ///
    /// Remembered per thread ([`memo`]).
    fn first_interval_ending_after(&self, t: DateTime<Utc>) -> Option<Interval> {
        memo::first_interval_ending_after(self, t, || self.intervals_ending_after(t).next())
    }

    /// The non-empty day intervals, in date order, from the first one that closes after `t`.
    fn intervals_ending_after(&self, t: DateTime<Utc>) -> DayIntervals<'_> {
        // How far back a window may still be open at `t`, whose local date is `today`: a
        // same-day window of yesterday (it can outlast midnight when the clocks go back), an
        // overnight one of the day before yesterday (when the clocks go back across midnight,
        // as Newfoundland's did at 00:01). An earlier one would need the clocks to go back
        // by more than a day.
        let today = t.with_timezone(&self.timezone).date_naive();
        let back = if self.is_overnight() { 2 } else { 1 };
        DayIntervals {
            window: self,
            date: Some(
                today
                    .checked_sub_days(Days::new(back))
                    .unwrap_or(NaiveDate::MIN),
            ),
            after: t,
        }
    }

    /// When the window of local date `date` opens.
    fn open_on(&self, date: NaiveDate) -> DateTime<Utc> {
        first_reaching(self.timezone, date.and_time(self.start.to_naive_time()))
    }

    /// When the window of local date `date` closes; `None` past the end of chrono's range.
    fn close_on(&self, date: NaiveDate) -> Option<DateTime<Utc>> {
        let closing_date = if self.is_overnight() {
            date.succ_opt()?
        } else {
            date
        };
        Some(last_reaching(
            self.timezone,
            closing_date.and_time(self.end.to_naive_time()),
        ))
    }
}

/// The intervals of the allowed local dates from `date` on, skipping those that close at or
/// before `after` and those that are empty (a window inside a daylight-saving gap).
struct DayIntervals<'a> {
    window: &'a CallingWindow,
    date: Option<NaiveDate>,
    after: DateTime<Utc>,
}

impl Iterator for DayIntervals<'_> {
    type Item = Interval;

    fn next(&mut self) -> Option<Interval> {
        loop {
            let date = self.date?;
            self.date = date.succ_opt();
            if !self.window.days.contains(date.weekday()) {
                continue;
            }
            // The closing first: most skipped dates need no opening at all.
            let close = self.window.close_on(date)?;
            if close <= self.after {
                continue;
            }
            let open = self.window.open_on(date);
            if open < close {
                return Some((open, close));
            }
        }
    }
}

/// Joins intervals (sorted by opening, with non-decreasing closings) that touch or overlap.
struct Merged<I: Iterator<Item = Interval>> {
    inner: Peekable<I>,
}

impl<I: Iterator<Item = Interval>> Merged<I> {
    fn new(inner: I) -> Self {
        Merged {
            inner: inner.peekable(),
        }
    }
}

impl<I: Iterator<Item = Interval>> Iterator for Merged<I> {
    type Item = Interval;

    fn next(&mut self) -> Option<Interval> {
        let (open, mut close) = self.inner.next()?;
        while let Some((_, next_close)) = self.inner.next_if(|&(next_open, _)| next_open <= close) {
            close = close.max(next_close);
        }
        Some((open, close))
    }
}

/// The first instant at which the wall clock of `tz` shows `local` or a later time: the
/// instant itself when `local` exists once, the earlier one when it exists twice, the end of
/// the gap when it does not exist.
fn first_reaching(tz: Tz, local: NaiveDateTime) -> DateTime<Utc> {
    match tz.from_local_datetime(&local) {
        LocalResult::Single(t) => t.with_timezone(&Utc),
        LocalResult::Ambiguous(a, b) => a.min(b).with_timezone(&Utc),
        LocalResult::None => gap_end(tz, local),
    }
}

/// The last instant at which the wall clock of `tz` reaches `local`, after which it never
/// shows an earlier time: the instant itself when `local` exists once, the later one when it
/// exists twice, the end of the gap when it does not exist.
fn last_reaching(tz: Tz, local: NaiveDateTime) -> DateTime<Utc> {
    match tz.from_local_datetime(&local) {
        LocalResult::Single(t) => t.with_timezone(&Utc),
        LocalResult::Ambiguous(a, b) => a.max(b).with_timezone(&Utc),
        LocalResult::None => gap_end(tz, local),
    }
}

/// For a `local` time (whole seconds) skipped by a forward clock change in `tz`: the instant
/// the change happens, which is the first instant whose wall-clock time is after `local`.
///
/// Found by bisection over whole seconds (time-zone transitions fall on whole seconds). UTC
/// offsets are below a day, so the wall clock is before `local` a day earlier and after it a
/// day later.
fn gap_end(tz: Tz, local: NaiveDateTime) -> DateTime<Utc> {
    const DAY: i64 = 86_400;
    let target = local.and_utc().timestamp();
    let wall_clock = |utc: i64| {
        let offset = tz
            .offset_from_utc_datetime(&utc_from_timestamp(utc).naive_utc())
            .fix();
        utc + i64::from(offset.local_minus_utc())
    };
    let (mut before, mut after) = (target - DAY, target + DAY);
    while after - before > 1 {
        let mid = before + (after - before) / 2;
        if wall_clock(mid) >= target {
            after = mid;
        } else {
            before = mid;
        }
    }
    utc_from_timestamp(after)
}

/// `secs` since the Unix epoch, clamped to chrono's range.
fn utc_from_timestamp(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(secs, 0).unwrap_or(if secs < 0 {
        DateTime::<Utc>::MIN_UTC
    } else {
        DateTime::<Utc>::MAX_UTC
    })
}

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use rstest::rstest;

    use super::*;

    /// An instant written as RFC 3339 UTC, `2026-03-08T07:00:00Z`.
    fn utc(s: &str) -> DateTime<Utc> {
        s.parse()
            .unwrap_or_else(|e| panic!("bad test instant {s}: {e}"))
    }

    fn days(names: &[&str]) -> WeekdaySet {
        names.iter().map(|n| parse_weekday(n).unwrap()).collect()
    }

    const WEEKDAYS: &[&str] = &["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"];
    const EVERY_DAY: &[&str] = &[
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
    ];

    fn window(tz: &str, on: &[&str], start: &str, end: &str) -> CallingWindow {
        CallingWindow::new(
            parse_timezone(tz).unwrap(),
            days(on),
            start.parse().unwrap(),
            end.parse().unwrap(),
        )
        .unwrap()
    }

    fn intervals(w: &CallingWindow, from: &str, to: &str) -> Vec<(String, String)> {
        w.windows_between(utc(from), utc(to))
            .into_iter()
            .map(|(a, b)| (a.to_rfc3339(), b.to_rfc3339()))
            .collect()
    }

    fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
        expected
            .iter()
            .map(|(a, b)| (utc(a).to_rfc3339(), utc(b).to_rfc3339()))
            .collect()
    }

    // ---- TimeOfDay ---------------------------------------------------------------------

    #[rstest]
    #[case("00:00", 0, 0)]
    #[case("00:01", 0, 1)]
    #[case("09:05", 9, 5)]
    #[case("12:30", 12, 30)]
    #[case("23:59", 23, 59)]
    fn time_of_day_parses_strict_hh_mm(#[case] s: &str, #[case] hour: u32, #[case] minute: u32) {
        let t: TimeOfDay = s.parse().unwrap();
        assert_eq!((t.hour(), t.minute()), (hour, minute));
        assert_eq!(t.minutes(), hour * 60 + minute);
        assert_eq!(t, TimeOfDay::new(hour, minute).unwrap());
        assert_eq!(t.to_string(), s);
    }

    #[rstest]
    #[case("24:00")]
    #[case("9:00")]
    #[case("09:60")]
    #[case("0900")]
    #[case("")]
    #[case("09:0")]
    #[case("09:000")]
    #[case(" 09:00")]
    #[case("09:00 ")]
    #[case("09-00")]
    #[case("+9:00")]
    #[case("-1:00")]
    #[case("99:99")]
    #[case("09:00:00")]
    #[case("\u{0660}\u{0669}:00")]
    fn time_of_day_refuses_anything_else(#[case] s: &str) {
        assert_eq!(
            s.parse::<TimeOfDay>(),
            Err(ScheduleError::InvalidTimeOfDay(s.to_owned()))
        );
    }

    #[test]
    fn time_of_day_error_names_the_input_and_the_form() {
        let err = "9:00".parse::<TimeOfDay>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "'9:00' is not a time of day: write it as HH:MM on the 24-hour clock, from 00:00 to 23:59"
        );
    }

    #[test]
    fn time_of_day_new_checks_ranges() {
        assert_eq!(TimeOfDay::new(24, 0), None);
        assert_eq!(TimeOfDay::new(0, 60), None);
        assert_eq!(TimeOfDay::new(23, 59).map(TimeOfDay::minutes), Some(1439));
        assert_eq!(TimeOfDay::MIDNIGHT, TimeOfDay::new(0, 0).unwrap());
    }

    #[test]
    fn time_of_day_round_trips_every_minute_in_order() {
        let mut previous = None;
        for minutes in 0..1440 {
            let t = TimeOfDay::new(minutes / 60, minutes % 60).unwrap();
            assert_eq!(t.minutes(), minutes);
            assert_eq!(t.to_string().parse::<TimeOfDay>(), Ok(t));
            assert_eq!(
                t.to_naive_time(),
                NaiveTime::from_hms_opt(t.hour(), t.minute(), 0).unwrap()
            );
            assert!(previous < Some(t));
            previous = Some(t);
        }
    }

    #[test]
    fn time_of_day_serde_is_the_hh_mm_string() {
        let t = TimeOfDay::new(9, 5).unwrap();
        assert_eq!(serde_json::to_string(&t).unwrap(), r#""09:05""#);
        assert_eq!(
            serde_json::from_str::<TimeOfDay>(r#""23:59""#)
                .unwrap()
                .minutes(),
            1439
        );
        let err = serde_json::from_str::<TimeOfDay>(r#""24:00""#).unwrap_err();
        assert!(
            err.to_string().contains("'24:00' is not a time of day"),
            "{err}"
        );
        let err = serde_json::from_str::<TimeOfDay>("900").unwrap_err();
        assert!(err.to_string().contains("HH:MM"), "{err}");
    }

    // ---- Weekdays, time zones --------------------------------------------------------------

    #[rstest]
    #[case("Monday", Weekday::Mon)]
    #[case("monday", Weekday::Mon)]
    #[case("TUESDAY", Weekday::Tue)]
    #[case("Wednesday", Weekday::Wed)]
    #[case("thursday", Weekday::Thu)]
    #[case("Friday", Weekday::Fri)]
    #[case("saturday", Weekday::Sat)]
    #[case("sUnDaY", Weekday::Sun)]
    fn weekday_parses_full_names_in_any_case(#[case] s: &str, #[case] day: Weekday) {
        assert_eq!(parse_weekday(s), Ok(day));
    }

    #[rstest]
    #[case("Mon")]
    #[case("")]
    #[case(" Monday")]
    #[case("Monday ")]
    #[case("Montag")]
    #[case("Funday")]
    #[case("1")]
    fn weekday_refuses_other_spellings(#[case] s: &str) {
        let err = parse_weekday(s).unwrap_err();
        assert_eq!(err, ScheduleError::UnknownWeekday(s.to_owned()));
        assert_eq!(
            err.to_string(),
            format!("'{s}' is not a weekday: use a full English name such as 'Monday'")
        );
    }

    #[test]
    fn weekday_names_are_canonical_and_round_trip() {
        let names: Vec<_> = WEEK.into_iter().map(weekday_name).collect();
        assert_eq!(names, EVERY_DAY);
        for d in WEEK {
            assert_eq!(parse_weekday(weekday_name(d)), Ok(d));
        }
    }

    #[rstest]
    #[case("America/New_York", Tz::America__New_York)]
    #[case("Asia/Kolkata", Tz::Asia__Kolkata)]
    #[case("Europe/London", Tz::Europe__London)]
    #[case("UTC", Tz::UTC)]
    #[case("Australia/Lord_Howe", Tz::Australia__Lord_Howe)]
    fn timezone_parses_iana_names(#[case] s: &str, #[case] tz: Tz) {
        assert_eq!(parse_timezone(s), Ok(tz));
    }

    #[rstest]
    #[case(
        "Mars/Olympus",
        "unknown IANA time zone 'Mars/Olympus'; use a name such as 'America/New_York'"
    )]
    #[case("", "unknown IANA time zone ''; use a name such as 'America/New_York'")]
    #[case(
        "america/new_york",
        "unknown IANA time zone 'america/new_york'; did you mean 'America/New_York'?"
    )]
    #[case(
        " Asia/Kolkata",
        "unknown IANA time zone ' Asia/Kolkata'; did you mean 'Asia/Kolkata'?"
    )]
    #[case(
        "GMT+5:30",
        "unknown IANA time zone 'GMT+5:30'; use a name such as 'America/New_York'"
    )]
    fn timezone_refuses_unknown_names_clearly(#[case] s: &str, #[case] message: &str) {
        assert_eq!(parse_timezone(s).unwrap_err().to_string(), message);
    }

    #[test]
    fn weekday_set_is_a_set_iterated_monday_first() {
        let set = WeekdaySet::from_days([Weekday::Sun, Weekday::Wed, Weekday::Mon, Weekday::Sun]);
        assert_eq!(set.len(), 3);
        assert!(!set.is_empty());
        assert!(set.contains(Weekday::Sun) && set.contains(Weekday::Wed));
        assert!(!set.contains(Weekday::Tue) && !set.contains(Weekday::Sat));
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            [Weekday::Mon, Weekday::Wed, Weekday::Sun]
        );
        assert_eq!(format!("{set:?}"), r#"{"Monday", "Wednesday", "Sunday"}"#);

        assert!(WeekdaySet::EMPTY.is_empty());
        assert_eq!(WeekdaySet::EMPTY.len(), 0);
        assert_eq!(WeekdaySet::EMPTY.iter().next(), None);
        assert_eq!(WeekdaySet::ALL.len(), 7);
        assert_eq!(WeekdaySet::ALL.into_iter().collect::<Vec<_>>(), WEEK);
        assert_eq!(WeekdaySet::from_days(WEEK), WeekdaySet::ALL);
        assert_eq!(WeekdaySet::default(), WeekdaySet::EMPTY);
    }

    // ---- Construction ----------------------------------------------------------------------

    #[test]
    fn window_refuses_no_days_and_equal_times() {
        let nine = TimeOfDay::new(9, 0).unwrap();
        let five = TimeOfDay::new(17, 0).unwrap();
        let err = CallingWindow::new(Tz::UTC, WeekdaySet::EMPTY, nine, five).unwrap_err();
        assert_eq!(err, ScheduleError::NoAllowedDays);
        assert_eq!(
            err.to_string(),
            "a calling window needs at least one allowed day"
        );

        let err = CallingWindow::new(Tz::UTC, WeekdaySet::ALL, nine, nine).unwrap_err();
        assert_eq!(err, ScheduleError::StartEqualsEnd(nine));
        assert_eq!(
            err.to_string(),
            "the calling window starts and ends at 09:00; give an end time after the start \
             time, or before it for an overnight window (for example 22:00 to 06:00)"
        );

        let w = CallingWindow::new(Tz::Asia__Kolkata, days(WEEKDAYS), nine, five).unwrap();
        assert_eq!(w.timezone(), Tz::Asia__Kolkata);
        assert_eq!(w.days(), days(WEEKDAYS));
        assert_eq!((w.start(), w.end()), (nine, five));
        assert!(!w.is_overnight());
    }

    // ---- Window math -----------------------------------------------------------------------

    /// America/New_York, Monday to Friday, 09:00-17:00; January 2026 is EST (UTC-5).
    #[rstest]
    #[case("2026-01-14T13:59:59Z", false)] // Wednesday 08:59:59
    #[case("2026-01-14T14:00:00Z", true)] // 09:00, the opening: inside
    #[case("2026-01-14T18:30:00Z", true)]
    #[case("2026-01-14T21:59:59Z", true)] // one second before the end
    #[case("2026-01-14T22:00:00Z", false)] // 17:00, the closing: outside
    #[case("2026-01-15T03:00:00Z", false)] // Wednesday 22:00
    #[case("2026-01-16T14:00:00Z", true)] // Friday 09:00
    #[case("2026-01-17T15:00:00Z", false)] // Saturday 10:00
    #[case("2026-01-18T15:00:00Z", false)] // Sunday 10:00
    #[case("2026-01-19T14:00:00Z", true)] // Monday 09:00
    fn weekday_window_edges_and_weekends(#[case] t: &str, #[case] inside: bool) {
        let w = window("America/New_York", WEEKDAYS, "09:00", "17:00");
        assert_eq!(w.contains(utc(t)), inside);
        assert_eq!(w.current_close(utc(t)).is_some(), inside);
    }

    #[test]
    fn weekday_window_closes_and_reopens() {
        let w = window("America/New_York", WEEKDAYS, "09:00", "17:00");
        assert_eq!(
            w.current_close(utc("2026-01-14T15:00:00Z")),
            Some(utc("2026-01-14T22:00:00Z"))
        );
        // Inside: next_open is the instant itself.
        let t = utc("2026-01-14T15:00:00Z");
        assert_eq!(w.next_open(t), t);
        // Early in the morning: later the same day.
        assert_eq!(
            w.next_open(utc("2026-01-14T12:00:00Z")),
            utc("2026-01-14T14:00:00Z")
        );
        // At the closing: the next morning.
        assert_eq!(
            w.next_open(utc("2026-01-14T22:00:00Z")),
            utc("2026-01-15T14:00:00Z")
        );
    }

    #[rstest]
    #[case("2026-01-16T22:00:00Z")] // Friday 17:00, the closing
    #[case("2026-01-17T17:00:00Z")] // Saturday noon
    #[case("2026-01-19T13:59:59Z")] // Monday 08:59:59
    fn next_open_skips_the_weekend(#[case] t: &str) {
        let w = window("America/New_York", WEEKDAYS, "09:00", "17:00");
        assert_eq!(w.next_open(utc(t)), utc("2026-01-19T14:00:00Z"));
    }

    #[rstest]
    // Friday evening EST to Monday 09:00 EDT (clocks went forward on Sunday 2026-03-08).
    #[case("2026-03-06T23:00:00Z", "2026-03-09T13:00:00Z")]
    // Friday evening EDT to Monday 09:00 EST (clocks went back on Sunday 2026-11-01).
    #[case("2026-10-30T22:00:00Z", "2026-11-02T14:00:00Z")]
    fn next_open_across_a_clock_change(#[case] t: &str, #[case] open: &str) {
        let w = window("America/New_York", WEEKDAYS, "09:00", "17:00");
        assert_eq!(w.next_open(utc(t)), utc(open));
    }

    /// Europe/Berlin (CET, UTC+1 in January), 22:00-06:00, Monday to Friday.
    #[rstest]
    #[case("2026-01-16T20:59:59Z", false)] // Friday 21:59:59
    #[case("2026-01-16T21:00:00Z", true)] // Friday 22:00
    #[case("2026-01-16T23:30:00Z", true)] // Saturday 00:30, Friday's window
    #[case("2026-01-17T02:00:00Z", true)] // Saturday 03:00
    #[case("2026-01-17T04:59:59Z", true)] // Saturday 05:59:59
    #[case("2026-01-17T05:00:00Z", false)] // Saturday 06:00, the closing
    #[case("2026-01-17T21:00:00Z", false)] // Saturday 22:00: Saturday is not allowed
    #[case("2026-01-18T02:00:00Z", false)] // Sunday 03:00
    #[case("2026-01-18T21:00:00Z", false)] // Sunday 22:00
    #[case("2026-01-19T02:00:00Z", false)] // Monday 03:00: Sunday's window, not allowed
    #[case("2026-01-19T21:00:00Z", true)] // Monday 22:00
    #[case("2026-01-20T02:00:00Z", true)] // Tuesday 03:00, Monday's window
    fn overnight_window_belongs_to_its_opening_day(#[case] t: &str, #[case] inside: bool) {
        let w = window("Europe/Berlin", WEEKDAYS, "22:00", "06:00");
        assert!(w.is_overnight());
        assert_eq!(w.contains(utc(t)), inside);
    }

    #[test]
    fn overnight_window_close_and_next_open() {
        let w = window("Europe/Berlin", WEEKDAYS, "22:00", "06:00");
        assert_eq!(
            w.current_close(utc("2026-01-17T02:00:00Z")),
            Some(utc("2026-01-17T05:00:00Z"))
        );
        assert_eq!(
            w.next_open(utc("2026-01-17T05:00:00Z")),
            utc("2026-01-19T21:00:00Z")
        );
        assert_eq!(
            intervals(&w, "2026-01-16T00:00:00Z", "2026-01-20T00:00:00Z"),
            pairs(&[
                ("2026-01-16T00:00:00Z", "2026-01-16T05:00:00Z"), // Thursday's, clipped
                ("2026-01-16T21:00:00Z", "2026-01-17T05:00:00Z"), // Friday's
                ("2026-01-19T21:00:00Z", "2026-01-20T00:00:00Z"), // Monday's, clipped
            ])
        );
    }

    /// Asia/Kolkata (UTC+05:30), 18:00 until midnight, Monday to Friday.
    #[rstest]
    #[case("2026-01-12T12:29:59Z", false)] // Monday 17:59:59
    #[case("2026-01-12T12:30:00Z", true)] // Monday 18:00
    #[case("2026-01-12T18:29:59Z", true)] // Monday 23:59:59
    #[case("2026-01-12T18:30:00Z", false)] // Tuesday 00:00: closed
    #[case("2026-01-16T18:29:59Z", true)] // Friday 23:59:59
    #[case("2026-01-16T18:30:00Z", false)] // Saturday 00:00
    #[case("2026-01-17T12:30:00Z", false)] // Saturday 18:00
    fn window_until_midnight(#[case] t: &str, #[case] inside: bool) {
        let w = window("Asia/Kolkata", WEEKDAYS, "18:00", "00:00");
        assert!(w.is_overnight());
        assert_eq!(w.contains(utc(t)), inside);
    }

    #[test]
    fn window_until_midnight_closes_at_midnight() {
        let w = window("Asia/Kolkata", WEEKDAYS, "18:00", "00:00");
        assert_eq!(
            w.current_close(utc("2026-01-12T14:30:00Z")),
            Some(utc("2026-01-12T18:30:00Z"))
        );
        // Monday 2026-01-12 to Monday 2026-01-19, local midnights: five six-hour windows.
        let from = utc("2026-01-11T18:30:00Z");
        let to = utc("2026-01-18T18:30:00Z");
        assert_eq!(w.open_seconds_between(from, to), 5 * 6 * 3600);
    }

    #[test]
    fn kolkata_has_exact_half_hour_offsets() {
        let w = window("Asia/Kolkata", WEEKDAYS, "09:00", "17:00");
        assert_eq!(
            intervals(&w, "2026-01-12T00:00:00Z", "2026-01-13T00:00:00Z"),
            pairs(&[("2026-01-12T03:30:00Z", "2026-01-12T11:30:00Z")])
        );
        assert!(!w.contains(utc("2026-01-12T03:29:59Z")));
        assert!(w.contains(utc("2026-01-12T03:30:00Z")));
        assert!(w.contains(utc("2026-01-12T11:29:59Z")));
        assert!(!w.contains(utc("2026-01-12T11:30:00Z")));
        // Midsummer, same offset: no daylight saving in India.
        assert_eq!(
            intervals(&w, "2026-07-15T00:00:00Z", "2026-07-16T00:00:00Z"),
            pairs(&[("2026-07-15T03:30:00Z", "2026-07-15T11:30:00Z")])
        );
    }

    // America/New_York springs forward on Sunday 2026-03-08: 02:00 EST becomes 03:00 EDT
    // (07:00 UTC), so local 02:00-02:59 does not exist that day.

    #[test]
    fn spring_forward_window_around_the_gap_loses_an_hour() {
        let w = window("America/New_York", EVERY_DAY, "01:30", "03:30");
        // 01:30 EST = 06:30Z; 03:30 EDT = 07:30Z.
        assert_eq!(
            intervals(&w, "2026-03-08T05:00:00Z", "2026-03-09T05:00:00Z"),
            pairs(&[("2026-03-08T06:30:00Z", "2026-03-08T07:30:00Z")])
        );
        assert_eq!(
            w.open_seconds_between(utc("2026-03-08T05:00:00Z"), utc("2026-03-09T04:00:00Z")),
            3600
        );
        // The day before: 01:30-03:30 EST = 06:30Z-08:30Z, two hours.
        assert_eq!(
            w.open_seconds_between(utc("2026-03-07T05:00:00Z"), utc("2026-03-08T05:00:00Z")),
            7200
        );
    }

    #[test]
    fn spring_forward_window_inside_the_gap_is_empty_that_day() {
        let w = window("America/New_York", EVERY_DAY, "02:00", "02:30");
        assert_eq!(
            intervals(&w, "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z"),
            pairs(&[])
        );
        assert!(!w.contains(utc("2026-03-08T07:00:00Z")));
        assert_eq!(w.current_close(utc("2026-03-08T07:00:00Z")), None);
        // Saturday 02:00 EST = 07:00Z; next is Monday 02:00 EDT = 06:00Z.
        assert_eq!(
            w.next_open(utc("2026-03-07T08:00:00Z")),
            utc("2026-03-09T06:00:00Z")
        );
        assert_eq!(
            intervals(&w, "2026-03-07T00:00:00Z", "2026-03-10T00:00:00Z"),
            pairs(&[
                ("2026-03-07T07:00:00Z", "2026-03-07T07:30:00Z"),
                ("2026-03-09T06:00:00Z", "2026-03-09T06:30:00Z"),
            ])
        );
    }

    #[test]
    fn spring_forward_business_hours_shift_in_utc() {
        let w = window("America/New_York", EVERY_DAY, "09:00", "17:00");
        // Saturday in EST, Sunday (the change day) and Monday in EDT: always eight hours.
        assert_eq!(
            intervals(&w, "2026-03-07T00:00:00Z", "2026-03-10T00:00:00Z"),
            pairs(&[
                ("2026-03-07T14:00:00Z", "2026-03-07T22:00:00Z"),
                ("2026-03-08T13:00:00Z", "2026-03-08T21:00:00Z"),
                ("2026-03-09T13:00:00Z", "2026-03-09T21:00:00Z"),
            ])
        );
    }

    #[test]
    fn spring_forward_overnight_window_is_an_hour_shorter() {
        let w = window("America/New_York", EVERY_DAY, "22:00", "06:00");
        assert_eq!(
            intervals(&w, "2026-03-07T00:00:00Z", "2026-03-09T12:00:00Z"),
            pairs(&[
                ("2026-03-07T03:00:00Z", "2026-03-07T11:00:00Z"), // Fri 22:00 EST-Sat 06:00 EST: 8 h
                ("2026-03-08T03:00:00Z", "2026-03-08T10:00:00Z"), // Sat 22:00 EST-Sun 06:00 EDT: 7 h
                ("2026-03-09T02:00:00Z", "2026-03-09T10:00:00Z"), // Sun 22:00 EDT-Mon 06:00 EDT: 8 h
            ])
        );
    }

    #[test]
    fn spring_forward_gap_edges_merge_into_one_window() {
        // Window 02:30 to 02:00 the next day. On 2026-03-08 both the closing of Saturday's
        // window (02:00) and the opening of Sunday's (02:30) fall in the gap and resolve to
        // 07:00Z: the two touch and count as one.
        let w = window("America/New_York", EVERY_DAY, "02:30", "02:00");
        assert_eq!(
            intervals(&w, "2026-03-07T00:00:00Z", "2026-03-10T00:00:00Z"),
            pairs(&[
                ("2026-03-07T00:00:00Z", "2026-03-07T07:00:00Z"),
                ("2026-03-07T07:30:00Z", "2026-03-09T06:00:00Z"),
                ("2026-03-09T06:30:00Z", "2026-03-10T00:00:00Z"),
            ])
        );
        assert_eq!(
            w.current_close(utc("2026-03-08T06:59:00Z")),
            Some(utc("2026-03-09T06:00:00Z"))
        );
        assert!(w.contains(utc("2026-03-08T07:00:00Z")));
    }

    // America/New_York falls back on Sunday 2026-11-01: 02:00 EDT becomes 01:00 EST (06:00
    // UTC), so local 01:00-01:59 happens twice, 05:00Z-06:00Z and 06:00Z-07:00Z.

    #[test]
    fn fall_back_window_covers_both_repeated_hours() {
        let w = window("America/New_York", EVERY_DAY, "01:00", "02:00");
        assert_eq!(
            intervals(&w, "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z"),
            pairs(&[("2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z")])
        );
        assert!(w.contains(utc("2026-11-01T05:30:00Z"))); // 01:30 EDT
        assert!(w.contains(utc("2026-11-01T06:30:00Z"))); // 01:30 EST
        assert!(!w.contains(utc("2026-11-01T07:00:00Z"))); // 02:00 EST
        assert_eq!(
            w.current_close(utc("2026-11-01T05:30:00Z")),
            Some(utc("2026-11-01T07:00:00Z"))
        );
        // The local day of 2026-11-01 is 25 hours long; the window is open two of them.
        assert_eq!(
            w.open_seconds_between(utc("2026-11-01T04:00:00Z"), utc("2026-11-02T05:00:00Z")),
            7200
        );
        // An ordinary day: one hour.
        assert_eq!(
            w.open_seconds_between(utc("2026-10-31T04:00:00Z"), utc("2026-11-01T04:00:00Z")),
            3600
        );
    }

    #[rstest]
    // Ambiguous end: the later 01:30 (EST).
    #[case("00:30", "01:30", "2026-11-01T04:30:00Z", "2026-11-01T06:30:00Z")]
    // Ambiguous start: the earlier 01:30 (EDT).
    #[case("01:30", "03:00", "2026-11-01T05:30:00Z", "2026-11-01T08:00:00Z")]
    // Both ambiguous: 01:15 EDT to 01:45 EST.
    #[case("01:15", "01:45", "2026-11-01T05:15:00Z", "2026-11-01T06:45:00Z")]
    // After the change: plain EST.
    #[case("09:00", "17:00", "2026-11-01T14:00:00Z", "2026-11-01T22:00:00Z")]
    fn fall_back_resolves_earlier_opening_and_later_closing(
        #[case] start: &str,
        #[case] end: &str,
        #[case] open: &str,
        #[case] close: &str,
    ) {
        let w = window("America/New_York", &["Sunday"], start, end);
        assert_eq!(
            intervals(&w, "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z"),
            pairs(&[(open, close)])
        );
    }

    #[test]
    fn fall_back_overlapping_days_count_once() {
        // 01:20 to 01:10 the next day. Saturday's window closes at the later 01:10 on Sunday
        // (06:10Z), after Sunday's opens at the earlier 01:20 (05:20Z): one run, no second
        // counted twice.
        let w = window("America/New_York", EVERY_DAY, "01:20", "01:10");
        let runs = w.windows_between(utc("2026-10-31T05:20:00Z"), utc("2026-11-02T07:00:00Z"));
        assert_eq!(
            runs.iter()
                .map(|(a, b)| (a.to_rfc3339(), b.to_rfc3339()))
                .collect::<Vec<_>>(),
            pairs(&[
                ("2026-10-31T05:20:00Z", "2026-11-02T06:10:00Z"),
                ("2026-11-02T06:20:00Z", "2026-11-02T07:00:00Z"),
            ])
        );
        assert_eq!(
            w.open_seconds_between(utc("2026-10-31T05:20:00Z"), utc("2026-11-02T06:10:00Z")),
            (48 * 60 + 50) * 60
        );
        assert_eq!(
            w.current_close(utc("2026-11-01T05:30:00Z")),
            Some(utc("2026-11-02T06:10:00Z"))
        );
    }

    #[test]
    fn a_day_skipped_by_the_date_line_has_no_window() {
        // Samoa skipped Friday 2011-12-30: Thursday 23:59:59 (UTC-10) was followed by Saturday
        // 00:00 (UTC+14). The Friday window never happens; the next is a week later, 09:00
        // UTC+14 = 19:00Z the day before.
        let w = window("Pacific/Apia", &["Friday"], "09:00", "17:00");
        assert_eq!(
            w.next_open(utc("2011-12-29T20:00:00Z")),
            utc("2012-01-05T19:00:00Z")
        );
        assert_eq!(
            w.open_seconds_between(utc("2011-12-25T00:00:00Z"), utc("2012-01-05T19:00:00Z")),
            0
        );
    }

    #[test]
    fn open_seconds_over_thirty_days_is_exact() {
        // 2026-01-01 (a Thursday) to 2026-01-31 in Kolkata: 22 weekdays of eight hours.
        let w = window("Asia/Kolkata", WEEKDAYS, "09:00", "17:00");
        let (from, to) = (utc("2026-01-01T00:00:00Z"), utc("2026-01-31T00:00:00Z"));
        let runs = w.windows_between(from, to);
        assert_eq!(runs.len(), 22);
        assert_eq!(w.open_seconds_between(from, to), 22 * 8 * 3600);
    }

    /// Thirty days from `from`, each span across a clock change of its zone except the last.
    #[rstest]
    #[case("America/New_York", WEEKDAYS, "09:00", "17:00", "2026-02-20")]
    #[case("America/New_York", EVERY_DAY, "22:00", "06:00", "2026-10-15")]
    #[case("America/New_York", EVERY_DAY, "01:30", "03:30", "2026-02-20")]
    #[case("America/New_York", &["Saturday", "Sunday"], "02:15", "01:45", "2026-10-15")]
    #[case("Europe/London", WEEKDAYS, "18:00", "00:00", "2026-03-10")]
    // Lord Howe moves its clocks by 30 minutes, at 02:00.
    #[case("Australia/Lord_Howe", EVERY_DAY, "01:45", "02:15", "2026-03-20")]
    #[case("Australia/Lord_Howe", EVERY_DAY, "01:45", "02:15", "2026-09-20")]
    // Santiago changes its clocks at midnight, so the local date itself repeats or skips.
    #[case("America/Santiago", EVERY_DAY, "23:30", "00:30", "2026-03-25")]
    #[case("America/Santiago", EVERY_DAY, "23:30", "00:30", "2026-08-25")]
    #[case("Asia/Kolkata", &["Sunday"], "00:00", "23:59", "2026-01-01")]
    fn open_seconds_over_thirty_days_match_a_minute_by_minute_count(
        #[case] tz: &str,
        #[case] on: &[&str],
        #[case] start: &str,
        #[case] end: &str,
        #[case] from: &str,
    ) {
        // All edges fall on whole minutes, so counting minutes is exact.
        let w = window(tz, on, start, end);
        let from = utc(&format!("{from}T00:00:00Z"));
        let to = from + TimeDelta::days(30);
        let by_minute = (0..(to - from).num_minutes())
            .filter(|m| w.contains(from + TimeDelta::minutes(*m)))
            .count() as i64
            * 60;
        let runs = w.windows_between(from, to);
        let by_runs: i64 = runs.iter().map(|(a, b)| (*b - *a).num_seconds()).sum();
        assert!(by_minute > 0);
        assert_eq!(w.open_seconds_between(from, to), by_minute);
        assert_eq!(by_runs, by_minute);
        // Runs are ordered, non-empty, separated, and agree with `contains` and
        // `current_close`.
        for pair in runs.windows(2) {
            assert!(pair[0].1 < pair[1].0, "{pair:?}");
        }
        for &(a, b) in &runs {
            assert!(a < b);
            assert!(w.contains(a) && w.contains(b - TimeDelta::seconds(1)));
            if b < to {
                assert!(!w.contains(b), "{b}");
                assert_eq!(w.current_close(a), Some(b));
            }
        }
    }

    #[test]
    fn open_seconds_is_zero_for_empty_or_reversed_spans() {
        let w = window("UTC", EVERY_DAY, "00:00", "23:59");
        let t = utc("2026-01-01T12:00:00Z");
        assert_eq!(w.open_seconds_between(t, t), 0);
        assert_eq!(w.open_seconds_between(t, t - TimeDelta::hours(1)), 0);
        assert!(w.windows_between(t, t - TimeDelta::hours(1)).is_empty());
        assert_eq!(w.open_seconds_between(t, t + TimeDelta::hours(1)), 3600);
        // Truncated to whole seconds.
        assert_eq!(
            w.open_seconds_between(t, t + TimeDelta::milliseconds(1999)),
            1
        );
    }

    #[test]
    fn gap_end_agrees_with_chrono_tz() {
        // Every minute of a few gaps: New York and London (one hour), Lord Howe (30
        // minutes), and Samoa's skipped day.
        let gaps = [
            (Tz::America__New_York, "2026-03-08T02:00:00", 60),
            (Tz::Europe__London, "2026-03-29T01:00:00", 60),
            (Tz::Australia__Lord_Howe, "2026-10-04T02:00:00", 30),
            (Tz::Pacific__Apia, "2011-12-30T00:00:00", 24 * 60),
        ];
        for (tz, first, minutes) in gaps {
            let first: NaiveDateTime = first.parse().unwrap();
            for m in 0..minutes {
                let local = first + TimeDelta::minutes(m);
                assert!(
                    tz.from_local_datetime(&local).single().is_none(),
                    "{tz} {local}"
                );
                let expected = chrono_tz::GapInfo::new(&local, &tz)
                    .and_then(|gap| gap.end)
                    .unwrap()
                    .with_timezone(&Utc);
                assert_eq!(gap_end(tz, local), expected, "{tz} {local}");
            }
        }
    }

    /// Time zones with unusual rules: half-hour and 45-minute offsets, 30-minute clock
    /// changes, southern-hemisphere summers, changes at midnight, none at all.
    const ZONES: &[&str] = &[
        "America/New_York",
        "Europe/London",
        "Asia/Kolkata",
        "Australia/Lord_Howe",
        "Pacific/Chatham",
        "America/Santiago",
        "America/Havana",
        "Asia/Tehran",
        "UTC",
    ];

    #[test]
    fn next_open_is_inside_and_nothing_before_it_is() {
        let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_ca11);
        let year_start = utc("2025-12-25T00:00:00Z").timestamp();
        let year_end = utc("2027-01-05T00:00:00Z").timestamp();
        for _ in 0..300 {
            let tz = parse_timezone(ZONES[rng.gen_range(0..ZONES.len())]).unwrap();
            let days = WeekdaySet {
                bits: rng.gen_range(1..=0x7f),
            };
            // Start and end on quarter hours, so they often land on a clock change.
            let start = TimeOfDay::new(rng.gen_range(0..24), 15 * rng.gen_range(0..4)).unwrap();
            let end = TimeOfDay::new(rng.gen_range(0..24), 15 * rng.gen_range(0..4)).unwrap();
            let Ok(w) = CallingWindow::new(tz, days, start, end) else {
                continue;
            };
            for _ in 0..40 {
                let t = utc_from_timestamp(rng.gen_range(year_start..year_end));
                let open = w.next_open(t);
                assert!(open >= t, "{w:?} {t}");
                assert!(w.contains(open), "{w:?} {t}: next_open {open} is outside");
                if w.contains(t) {
                    assert_eq!(open, t);
                    let close = w.current_close(t).expect("inside, so a closing");
                    assert!(close > t, "{w:?} {t}");
                    assert!(w.contains(close - TimeDelta::seconds(1)), "{w:?} {t}");
                    assert!(!w.contains(close), "{w:?} {t}: closes at {close}");
                    let step = (close - t) / 16;
                    for k in 0..16 {
                        assert!(w.contains(t + step * k), "{w:?} {t}: gap before {close}");
                    }
                } else {
                    assert_eq!(w.current_close(t), None);
                    assert!(!w.contains(open - TimeDelta::seconds(1)), "{w:?} {t}");
                    let step = (open - t) / 16;
                    for k in 0..16 {
                        let between = t + step * k;
                        assert!(!w.contains(between), "{w:?} {t}: {between} is inside");
                    }
                }
            }
        }
    }
}
