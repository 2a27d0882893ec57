//! The last intervals found, per thread: the campaign engine and the scenario runner ask
//! about the same window at times that mostly move forward, thousands of times per interval,
//! and each answer holds until its interval closes. A hit costs a few comparisons; a miss,
//! the time-zone lookups of [`CallingWindow::intervals_ending_after`].
//!
//! Why a remembered answer is exact: the search for `from` starts at the first local date
//! whose interval can close after `from` and returns the first interval, in date order, that
//! closes after it. For a later `t` before that interval's closing, every interval of an
//! earlier date closed by `from`, so by `t` too, and the interval still closes after `t`: it
//! is the answer for `t` as well. An earlier `t` is searched again.

use std::cell::RefCell;

use chrono::{DateTime, Utc};

use super::{CallingWindow, Interval};

/// How many windows each thread remembers an interval of (the most recently found first):
/// a run's campaigns with windows of their own.
const SLOTS: usize = 4;

/// An interval found, with the window and the instant it was found for.
#[derive(Clone, Copy)]
struct Found {
    window: CallingWindow,
    from: DateTime<Utc>,
    interval: Interval,
}

thread_local! {
    static FOUND: RefCell<[Option<Found>; SLOTS]> = const { RefCell::new([None; SLOTS]) };
}

/// The first non-empty interval of `window` that closes after `t`: remembered when this
/// thread found it for an instant at or before `t`, otherwise searched for by `search` and
/// remembered.
pub(super) fn first_interval_ending_after(
    window: &CallingWindow,
    t: DateTime<Utc>,
    search: impl FnOnce() -> Option<Interval>,
) -> Option<Interval> {
    let hit = FOUND.with_borrow(|slots| {
        slots.iter().flatten().find_map(|f| {
            (f.window == *window && f.from <= t && t < f.interval.1).then_some(f.interval)
        })
    });
    if hit.is_some() {
        return hit;
    }
    let interval = search()?;
    FOUND.with_borrow_mut(|slots| {
        // The window's own slot if it has one, else the least recently found.
        let at = slots
            .iter()
            .position(|f| f.is_some_and(|f| f.window == *window))
            .unwrap_or(SLOTS - 1);
        slots[..=at].rotate_right(1);
        slots[0] = Some(Found {
            window: *window,
            from: t,
            interval,
        });
    });
    Some(interval)
}

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::super::{TimeOfDay, WeekdaySet, parse_timezone};
    use super::*;

    /// Zones whose clocks change across midnight, by half an hour, or skip a day.
    const ZONES: &[&str] = &[
        "America/St_Johns",
        "Europe/London",
        "Australia/Lord_Howe",
        "Pacific/Apia",
        "America/Havana",
        "UTC",
    ];

    #[test]
    fn remembered_intervals_are_the_ones_a_search_finds() {
        let mut rng = ChaCha8Rng::seed_from_u64(0x3e30);
        let year_start = DateTime::parse_from_rfc3339("2011-01-01T00:00:00Z")
            .unwrap()
            .timestamp();
        let year_end = year_start + 366 * 86_400 * 16;
        let mut windows = vec![];
        while windows.len() < 12 {
            let tz = parse_timezone(ZONES[rng.gen_range(0..ZONES.len())]).unwrap();
            let days = WeekdaySet {
                bits: rng.gen_range(1..=0x7f),
            };
            let start = TimeOfDay::new(rng.gen_range(0..24), 15 * rng.gen_range(0..4)).unwrap();
            let end = TimeOfDay::new(rng.gen_range(0..24), 15 * rng.gen_range(0..4)).unwrap();
            if let Ok(w) = CallingWindow::new(tz, days, start, end) {
                windows.push(w);
            }
        }
        let mut hits = 0;
        for _ in 0..200 {
            // Runs of instants that mostly move forward by minutes to days, sometimes back,
            // over more windows than a thread remembers.
            let mut t = DateTime::from_timestamp(rng.gen_range(year_start..year_end), 0).unwrap();
            for _ in 0..200 {
                let of = if rng.gen_bool(0.8) { 2 } else { windows.len() };
                let w = &windows[rng.gen_range(0..of)];
                t += TimeDelta::seconds(match rng.gen_range(0..10) {
                    0 => -rng.gen_range(0..2 * 86_400),
                    1..=5 => rng.gen_range(0..3_600),
                    _ => rng.gen_range(0..3 * 86_400),
                });
                let searched = w.intervals_ending_after(t).next();
                // Now and then the exact closing of the interval just found.
                if let Some((_, close)) = searched
                    && rng.gen_bool(0.2)
                {
                    let _ = first_interval_ending_after(w, t, || searched);
                    t = close;
                }
                let searched = w.intervals_ending_after(t).next();
                let mut searches = 0;
                let found = first_interval_ending_after(w, t, || {
                    searches += 1;
                    w.intervals_ending_after(t).next()
                });
                assert_eq!(found, searched, "{w:?} at {t}");
                hits += 1 - searches;
            }
        }
        // The memo is used, not bypassed: most of these instants fall in a known interval.
        assert!(hits > 10_000, "{hits} remembered answers of 40,000");
    }
}
