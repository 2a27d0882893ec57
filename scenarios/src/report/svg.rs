//! The chart of a scenario report as inline SVG: dials per time bucket stacked by result,
//! the campaigns' calling windows shaded, state changes, faults, restarts and actions marked
//! as vertical lines with a tooltip. One `<path>` per result (each bucket a rectangle of
//! it), so the size grows with the buckets (at most a few hundred), not with the dials.

use std::fmt::Write;

use chrono::{DateTime, Utc};

use super::junit::escape;
use super::scenario::ChartReport;

/// Width of the drawing.
const W: f64 = 1000.0;
/// Height of the drawing.
const H: f64 = 320.0;
/// Margins: left, right, top, bottom.
const ML: f64 = 56.0;
const MR: f64 = 16.0;
const MT: f64 = 16.0;
const MB: f64 = 40.0;

/// The colour of each result, in the chart's series order.
pub fn colour(series: &str) -> &'static str {
    match series {
        "connected" => "#2e7d32",
        "short_duration" => "#9ccc65",
        "busy" => "#ef6c00",
        "no_answer" => "#90a4ae",
        "failed" => "#c62828",
        "provider_error" => "#6a1b9a",
        "internal_error" => "#283593",
        _ => "#555555",
    }
}

fn parse(t: &str) -> Option<DateTime<Utc>> {
    t.parse().ok()
}

/// The chart of `[from, until)` as an `<svg>` element.
pub fn render(c: &ChartReport, from: &str, until: &str) -> String {
    let (Some(t0), Some(t1)) = (parse(from), parse(until)) else {
        return String::new();
    };
    let span = (t1 - t0).num_seconds().max(1) as f64;
    let x = |t: DateTime<Utc>| {
        ML + ((t - t0).num_seconds() as f64 / span).clamp(0.0, 1.0) * (W - ML - MR)
    };
    let chart_from = parse(&c.from).unwrap_or(t0);
    let bucket_x = |i: u64| x(chart_from + chrono::Duration::seconds(i as i64 * c.bucket_secs));
    let max = c
        .buckets
        .iter()
        .map(|b| b[1..].iter().sum::<u64>())
        .max()
        .unwrap_or(0)
        .max(1);
    let top = nice_ceiling(max);
    let y = |n: f64| H - MB - n / top as f64 * (H - MB - MT);
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg id="dials-chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="100%" role="img" aria-label="Dials over time by result">"##
    );
    let _ = write!(
        s,
        r##"<rect class="plot" x="{ML}" y="{MT}" width="{}" height="{}" fill="#fafafa" stroke="#ccc"/>"##,
        W - ML - MR,
        H - MT - MB
    );
    // Calling windows.
    s.push_str(r##"<g class="windows">"##);
    for [a, b] in &c.windows {
        if let (Some(a), Some(b)) = (parse(a), parse(b)) {
            let (xa, xb) = (x(a), x(b));
            if xb > xa {
                let _ = write!(
                    s,
                    r##"<rect class="window" x="{xa:.1}" y="{MT}" width="{:.1}" height="{}" fill="#fff3c4"><title>calling window {} to {}</title></rect>"##,
                    (xb - xa).max(0.5),
                    H - MT - MB,
                    escape(&contracts::clock::format_instant(a)),
                    escape(&contracts::clock::format_instant(b))
                );
            }
        }
    }
    s.push_str("</g>");
    // Gridlines and the y axis.
    let parts = [5u64, 4, 2, 1]
        .into_iter()
        .find(|p| top.is_multiple_of(*p))
        .unwrap_or(1);
    for k in 0..=parts {
        let n = (top / parts * k) as f64;
        let yy = y(n);
        let _ = write!(
            s,
            r##"<line x1="{ML}" x2="{}" y1="{yy:.1}" y2="{yy:.1}" stroke="#e0e0e0"/><text x="{}" y="{:.1}" font-size="11" text-anchor="end" fill="#444">{}</text>"##,
            W - MR,
            ML - 6.0,
            yy + 4.0,
            n.round()
        );
    }
    // Bars, one path per result.
    let bar_w = (bucket_x(1) - bucket_x(0)).max(0.6);
    s.push_str(r##"<g class="dials">"##);
    for (k, series) in c.series.iter().enumerate() {
        let mut d = String::new();
        for b in &c.buckets {
            let n = b[k + 1];
            if n == 0 {
                continue;
            }
            let below: u64 = b[1..=k].iter().sum();
            let (y0, y1) = (y(below as f64), y((below + n) as f64));
            let _ = write!(
                d,
                "M{:.1} {y1:.1}h{bar_w:.1}V{y0:.1}h-{bar_w:.1}Z",
                bucket_x(b[0])
            );
        }
        if !d.is_empty() {
            let _ = write!(
                s,
                r##"<path class="series series-{series}" fill="{}" d="{d}"><title>{series}</title></path>"##,
                colour(series)
            );
        }
    }
    s.push_str("</g>");
    // Marks.
    s.push_str(r##"<g class="marks">"##);
    for m in &c.marks {
        if let Some(t) = parse(&m.at) {
            let xx = x(t);
            let stroke = match m.kind.as_str() {
                "fault" => "#c62828",
                "restart" => "#6a1b9a",
                "status" => "#1565c0",
                _ => "#424242",
            };
            let _ = write!(
                s,
                r##"<line class="mark mark-{}" x1="{xx:.1}" x2="{xx:.1}" y1="{MT}" y2="{}" stroke="{stroke}" stroke-dasharray="4 3"><title>{} {} {}: {}</title></line>"##,
                escape(&m.kind),
                H - MB,
                escape(&m.at),
                escape(&m.kind),
                escape(&m.subject),
                escape(&m.detail)
            );
        }
    }
    s.push_str("</g>");
    // Time axis: about eight labels.
    for k in 0..=7 {
        let t = t0 + chrono::Duration::seconds((span * f64::from(k) / 7.0) as i64);
        let label = axis_label(t, span / 7.0, span);
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{}" font-size="11" text-anchor="middle" fill="#444">{}</text>"##,
            x(t),
            H - MB + 16.0,
            escape(&label)
        );
    }
    let _ = write!(
        s,
        r##"<text x="{ML}" y="{}" font-size="11" fill="#444">dials per {} (UTC); shaded: calling windows; dashed: status changes, faults, restarts, actions</text>"##,
        H - 6.0,
        bucket_label(c.bucket_secs)
    );
    s.push_str("</svg>");
    s
}

/// A round axis maximum at or above `n`.
/// A time-axis label, with as much as tells labels `step` seconds apart apart over a chart
/// of `span` seconds: the day alone when they are a day or more apart, the day and the time
/// over several days, the time alone within a day.
fn axis_label(t: DateTime<Utc>, step: f64, span: f64) -> String {
    let format = if step >= 86_400.0 {
        "%a %d %b"
    } else if span > 86_400.0 {
        "%a %d %H:%M"
    } else {
        "%a %H:%M"
    };
    t.format(format).to_string()
}

fn nice_ceiling(n: u64) -> u64 {
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

/// `1 minute`, `15 minutes`, `1 hour`, `1 day`.
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

    #[test]
    fn axis_labels_differ_whatever_the_span() {
        let t0 = parse("2026-03-02T08:00:00.000Z").unwrap();
        for days in [0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 10.0, 30.0] {
            let span = days * 86_400.0;
            let labels: Vec<String> = (0..=7)
                .map(|k| {
                    let t = t0 + chrono::Duration::seconds((span * f64::from(k) / 7.0) as i64);
                    axis_label(t, span / 7.0, span)
                })
                .collect();
            let distinct: std::collections::BTreeSet<&String> = labels.iter().collect();
            assert_eq!(distinct.len(), labels.len(), "{days} days: {labels:?}");
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
