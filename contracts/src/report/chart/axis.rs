//! The chart's axes: round time ticks, a round maximum of counts, bucket widths in words.

use chrono::{DateTime, Utc};

/// Tick steps the time axis chooses from (seconds): the smallest giving at most eight.
const TICK_STEPS: [i64; 16] = [
    60, 120, 300, 600, 900, 1_800, 3_600, 7_200, 10_800, 21_600, 43_200, 86_400, 172_800, 345_600,
    604_800, 1_209_600,
];

/// The round ticks of `[t0, t1]`: every multiple of the step (from midnight UTC; weeks from
/// a Monday), and the step.
pub fn ticks(t0: DateTime<Utc>, t1: DateTime<Utc>) -> (i64, Vec<DateTime<Utc>>) {
    ticks_within(t0, t1, 8)
}

/// [`ticks`] with the smallest step giving at most `most` ticks (at least 1), for a
/// narrower drawing.
pub fn ticks_within(t0: DateTime<Utc>, t1: DateTime<Utc>, most: i64) -> (i64, Vec<DateTime<Utc>>) {
    let span = (t1 - t0).num_seconds().max(1);
    let most = most.max(1);
    let step = TICK_STEPS
        .iter()
        .copied()
        .find(|s| span / s <= most)
        .unwrap_or(1_209_600);
    // 1970-01-05 was a Monday.
    let origin = if step % 604_800 == 0 { 4 * 86_400 } else { 0 };
    let first = (t0.timestamp() - origin + step - 1).div_euclid(step) * step + origin;
    let mut out = vec![];
    let mut t = first;
    while t <= t1.timestamp() {
        if let Some(x) = DateTime::from_timestamp(t, 0) {
            out.push(x);
        }
        t += step;
    }
    (step, out)
}

/// A tick's label: the time within a day, the day and time over several, the day alone for
/// steps of a day or more.
pub(super) fn tick_label(t: DateTime<Utc>, step: i64, span: i64) -> String {
    let format = if step >= 86_400 {
        "%a %-d %b"
    } else if span > 6 * 86_400 {
        "%-d %b %H:%M"
    } else if span > 86_400 {
        "%a %H:%M"
    } else {
        "%H:%M"
    };
    t.format(format).to_string()
}

/// A round axis maximum at or above `n`.
pub(super) fn nice_ceiling(n: u64) -> u64 {
    let mut step = 1;
    loop {
        for m in [1, 2, 5] {
            if m * step >= n {
                return m * step;
            }
        }
        step *= 10;
    }
}

/// `minute`, `15 minutes`, `hour`, `day`.
pub fn bucket_label(secs: i64) -> String {
    match secs {
        s if s % 86_400 == 0 => plural(s / 86_400, "day"),
        s if s % 3_600 == 0 => plural(s / 3_600, "hour"),
        s if s % 60 == 0 => plural(s / 60, "minute"),
        s => plural(s, "second"),
    }
}

fn plural(n: i64, unit: &str) -> String {
    if n == 1 {
        unit.to_string()
    } else {
        format!("{n} {unit}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn ticks_are_round_and_at_most_eight() {
        for (from, until, step) in [
            ("2026-03-02T08:00:00Z", "2026-03-02T15:08:00Z", 3_600),
            ("2026-03-02T08:07:13Z", "2026-03-02T08:31:00Z", 300),
            ("2026-03-02T08:00:00Z", "2026-03-04T08:00:00Z", 21_600),
            ("2026-03-02T08:00:00Z", "2026-04-01T09:00:00Z", 345_600),
            ("2026-03-02T08:00:00Z", "2026-06-01T09:00:00Z", 1_209_600),
        ] {
            let (s, ticks) = ticks(t(from), t(until));
            assert_eq!(s, step, "{from} to {until}");
            assert!(!ticks.is_empty() && ticks.len() <= 8, "{ticks:?}");
            for k in &ticks {
                assert!(*k >= t(from) && *k <= t(until));
                assert_eq!(k.timestamp() % step.min(86_400), 0, "{k}");
                if step >= 604_800 {
                    assert_eq!(k.format("%a").to_string(), "Mon", "weeks start on Monday");
                }
            }
        }
    }

    #[test]
    fn axis_maxima_are_round() {
        assert_eq!(nice_ceiling(1), 1);
        assert_eq!(nice_ceiling(3), 5);
        assert_eq!(nice_ceiling(120), 200);
        assert_eq!(bucket_label(3_600), "hour");
        assert_eq!(bucket_label(900), "15 minutes");
    }
}
