//! The chart of dials over time as inline SVG, from one input, [`Chart`] (plain data: no
//! scenario, no runner, no platform): dials and inbound calls per time bucket stacked by
//! result; the calling windows and the key-service fault periods shaded; actions and status
//! changes as lines labelled with their row numbers in the table beside the chart and a
//! short text (marks a few minutes apart share a line: `marks.rs`); time ticks on round
//! minutes, hours or days (`axis.rs`); a hover on a bucket shows its time and counts. The
//! chart covers the part of the run with activity and says where the run ends when it goes
//! on without any.
//!
//! Two draw it: the scenario report (`harness run`, the run's timeline beside it) and the
//! platform's live page (`GET .../campaigns/{id}/chart`, a campaign's status changes beside
//! it), so the two always look alike.
//!
//! Nothing but the data comes in, and nothing outside the `<svg>` is needed (no script, no
//! style sheet), so the same chart can be drawn anywhere the report's JSON is. The report
//! draws it 1,000 units wide ([`render`]); the live page at the width it has on screen, so
//! that its text stays 11 pixels high on a phone too, and its calling windows in a neutral
//! grey ([`render_in`], [`Frame`]).

use std::fmt::Write;

use super::junit::escape;
use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

mod axis;
mod marks;

pub use axis::{bucket_label, ticks, ticks_within};
use axis::{nice_ceiling, tick_label};
use marks::{CHAR_W, marks, summary};

/// What the chart draws.
#[derive(Clone, Debug, Serialize)]
pub struct Chart {
    /// Where the chart starts (the run's start): the first bucket's start.
    pub from: String,
    /// Where it stops: the end of the activity (the last dial, call, mark or fault edge)
    /// with a margin, or the run's end.
    pub until: String,
    /// The run's end (after [`Chart::until`] when the run goes on with nothing to show).
    pub run_until: String,
    /// Bucket width in seconds.
    pub bucket_secs: i64,
    /// The series, in the order of each bucket's counts: the results, then
    /// `inbound_answered` and `inbound_not_answered` (the live page's: the results, then
    /// `in_progress`).
    pub series: Vec<String>,
    /// Counts per bucket: `[bucket index, count of each series...]`, empty buckets left out.
    pub buckets: Vec<Vec<u64>>,
    /// Calling windows of the campaigns (shaded): `[from, until]` pairs.
    pub windows: Vec<[String; 2]>,
    /// Key-service faults over stretches of time (shaded).
    pub faults: Vec<Period>,
    /// The timeline's actions, status changes, faults and restarts, each with its row number
    /// in the timeline.
    pub marks: Vec<Mark>,
}

/// A stretch of time.
#[derive(Clone, Debug, Serialize)]
pub struct Period {
    /// From.
    pub from: String,
    /// Until.
    pub until: String,
    /// What.
    pub label: String,
}

/// A mark: one row of the timeline.
#[derive(Clone, Debug, Serialize)]
pub struct Mark {
    /// Its row number in the timeline (from 1).
    pub n: usize,
    /// When.
    pub at: String,
    /// `action`, `status`, `fault`, `restart`.
    pub kind: String,
    /// What it concerns.
    pub subject: String,
    /// What happened.
    pub detail: String,
}

/// Width of the report's drawing ([`Frame::REPORT`]).
pub(super) const W: f64 = 1000.0;
/// Height of the drawing.
pub(super) const H: f64 = 380.0;
/// Margins: left, right, top (where the labels of the marks go), bottom.
const ML: f64 = 56.0;
const MR: f64 = 16.0;
pub(super) const MT: f64 = 70.0;
pub(super) const MB: f64 = 46.0;
/// The colour of each series.
pub fn colour(series: &str) -> &'static str {
    match series {
        "connected" => "#2e7d32",
        "short_duration" => "#9ccc65",
        "busy" => "#ef6c00",
        "no_answer" => "#90a4ae",
        "failed" => "#c62828",
        "provider_error" => "#6a1b9a",
        "internal_error" => "#283593",
        // The live page's dials not ended yet.
        "in_progress" => "#64b5f6",
        "inbound_answered" => "#00838f",
        "inbound_not_answered" => "#80deea",
        _ => "#555555",
    }
}

/// How a chart is drawn: its width (in drawing units, which are pixels where it is shown at
/// that width) and the fill of its calling windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Width of the drawing, at least [`Frame::MIN_WIDTH`]; its height is always 380.
    pub width: u32,
    /// Fill of the calling windows.
    pub window_fill: &'static str,
}

impl Frame {
    /// The scenario report's: 1,000 wide, calling windows in pale yellow.
    pub const REPORT: Frame = Frame {
        width: 1000,
        window_fill: "#fff3c4",
    };
    /// The narrowest drawing (a phone's width less its margins).
    pub const MIN_WIDTH: u32 = 280;
    /// The widest drawing.
    pub const MAX_WIDTH: u32 = 2400;
    /// A neutral grey for the calling windows (pale yellow reads as a warning on a page of
    /// statuses).
    pub const NEUTRAL_WINDOWS: &'static str = "#e8ecf1";
}

pub(super) fn parse(t: &str) -> Option<DateTime<Utc>> {
    t.parse().ok()
}

/// The chart as an `<svg>` element, as the scenario report draws it ([`Frame::REPORT`]).
pub fn render(c: &Chart) -> String {
    render_in(c, Frame::REPORT)
}

/// The chart as an `<svg>` element drawn `frame.width` wide (clamped to
/// [`Frame::MIN_WIDTH`]..=[`Frame::MAX_WIDTH`]): the text keeps its size, the time axis has
/// as many ticks as fit, and a caption too long for one line takes two or more.
pub fn render_in(c: &Chart, frame: Frame) -> String {
    let (Some(t0), Some(t1), Some(run_end)) =
        (parse(&c.from), parse(&c.until), parse(&c.run_until))
    else {
        return String::new();
    };
    let w = f64::from(frame.width.clamp(Frame::MIN_WIDTH, Frame::MAX_WIDTH));
    let span = (t1 - t0).num_seconds().max(1) as f64;
    let x = |t: DateTime<Utc>| {
        ML + ((t - t0).num_seconds() as f64 / span).clamp(0.0, 1.0) * (w - ML - MR)
    };
    let bucket_x = |i: u64| x(t0 + Duration::seconds(i as i64 * c.bucket_secs));
    let max = c
        .buckets
        .iter()
        .map(|b| b[1..].iter().sum::<u64>())
        .max()
        .unwrap_or(0)
        .max(1);
    let top = nice_ceiling(max);
    let y = |n: f64| H - MB - n / top as f64 * (H - MB - MT);
    let (plot_w, plot_h) = (w - ML - MR, H - MT - MB);
    // About 85 units a tick: eight on the report's 1,000, three on a phone.
    let (step, tick_times) = ticks_within(t0, t1, ((plot_w / 85.0) as i64).clamp(2, 8));
    let caption = caption(c, t0, t1, run_end);
    // The caption in lines that fit a drawing narrower than the report's (which keeps its
    // one line), each below the last.
    let fit = if w < W {
        ((w - ML - 4.0) / CHAR_W).max(20.0) as usize
    } else {
        usize::MAX
    };
    let caption = wrap(&caption, fit);
    let height = H + 14.0 * (caption.len().max(1) - 1) as f64;
    let mut s = String::with_capacity(16 * 1024 + c.buckets.len() * 300);
    let _ = write!(
        s,
        r##"<svg id="dials-chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {height}" width="100%" role="img" aria-label="Dials and inbound calls over time by result" data-tick-secs="{step}" font-family="system-ui, sans-serif">"##
    );
    let _ = write!(
        s,
        r##"<rect class="plot" x="{ML}" y="{MT}" width="{plot_w}" height="{plot_h}" fill="#fafafa" stroke="#ccc"/>"##
    );
    // Calling windows, then fault periods over them.
    s.push_str(r##"<g class="windows">"##);
    for [a, b] in &c.windows {
        shade(
            &mut s,
            &x,
            a,
            b,
            "window",
            frame.window_fill,
            1.0,
            "calling window",
        );
    }
    s.push_str(r##"</g><g class="faults">"##);
    for p in &c.faults {
        shade(
            &mut s, &x, &p.from, &p.until, "fault", "#e53935", 0.16, &p.label,
        );
    }
    s.push_str("</g>");
    // Gridlines: the y axis, and a line at each tick.
    let parts = [5u64, 4, 2, 1]
        .into_iter()
        .find(|p| top.is_multiple_of(*p))
        .unwrap_or(1);
    for k in 0..=parts {
        let n = (top / parts * k) as f64;
        let yy = y(n);
        let _ = write!(
            s,
            r##"<line x1="{ML}" x2="{}" y1="{yy:.1}" y2="{yy:.1}" stroke="#e0e0e0"/><text class="y-tick" x="{}" y="{:.1}" font-size="11" text-anchor="end" fill="#444">{}</text>"##,
            w - MR,
            ML - 6.0,
            yy + 4.0,
            n.round()
        );
    }
    for t in &tick_times {
        let xx = x(*t);
        let _ = write!(
            s,
            r##"<line x1="{xx:.1}" x2="{xx:.1}" y1="{MT}" y2="{}" stroke="#ececec"/>"##,
            H - MB
        );
    }
    // Bars: one path per series.
    let bar_w = (bucket_x(1) - bucket_x(0)).max(0.6);
    s.push_str(r##"<g class="dials">"##);
    for (k, series) in c.series.iter().enumerate() {
        let mut d = String::new();
        for b in &c.buckets {
            let n = b.get(k + 1).copied().unwrap_or(0);
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
                r##"<path class="series series-{series}" fill="{}" d="{d}"/>"##,
                colour(series)
            );
        }
    }
    s.push_str("</g>");
    if c.buckets.is_empty() {
        let _ = write!(
            s,
            r##"<text class="empty" x="{}" y="{}" font-size="13" text-anchor="middle" fill="#777">no dial and no inbound call in the run</text>"##,
            ML + plot_w / 2.0,
            MT + plot_h / 2.0
        );
    }
    // A hover area per bucket: its time and counts.
    s.push_str(r##"<g class="buckets">"##);
    for b in &c.buckets {
        let from = t0 + Duration::seconds(b[0] as i64 * c.bucket_secs);
        let _ = write!(
            s,
            r##"<rect class="bucket" x="{:.1}" y="{MT}" width="{bar_w:.1}" height="{plot_h}" fill="#000" fill-opacity="0"><title>{}</title></rect>"##,
            bucket_x(b[0]),
            escape(&bucket_title(c, from, b))
        );
    }
    s.push_str("</g>");
    marks(&mut s, c, &x, w);
    // Time axis.
    let span_secs = (t1 - t0).num_seconds();
    for t in &tick_times {
        let label = tick_label(*t, step, span_secs);
        let xx = x(*t);
        let half = label.chars().count() as f64 * CHAR_W / 2.0;
        let anchor = if xx - half < 0.0 {
            "start"
        } else if xx + half > w {
            "end"
        } else {
            "middle"
        };
        let _ = write!(
            s,
            r##"<text class="tick" data-t="{}" x="{xx:.1}" y="{}" font-size="11" text-anchor="{anchor}" fill="#444">{}</text>"##,
            crate::clock::format_instant(*t),
            H - MB + 16.0,
            escape(&label)
        );
    }
    for (i, line) in caption.iter().enumerate() {
        let _ = write!(
            s,
            r##"<text class="caption" x="{ML}" y="{}" font-size="11" fill="#444">{}</text>"##,
            H - 8.0 + 14.0 * i as f64,
            escape(line)
        );
    }
    s.push_str("</svg>");
    s
}

/// The caption below the time axis: the bucket width, the span, and what comes later in
/// the run when it goes on past the chart.
fn caption(c: &Chart, t0: DateTime<Utc>, t1: DateTime<Utc>, run_end: DateTime<Utc>) -> String {
    let day = |t: DateTime<Utc>| t.format("%a %-d %b %H:%M").to_string();
    let mut caption = format!(
        "per {} (UTC), {} to {}",
        bucket_label(c.bucket_secs),
        day(t0),
        day(t1)
    );
    if run_end > t1 {
        let later: Vec<String> = c
            .marks
            .iter()
            .filter(|m| parse(&m.at).is_some_and(|t| t > t1))
            .map(|m| {
                let at = parse(&m.at).map_or(String::new(), day);
                format!("{} {} ({at})", m.n, summary(std::slice::from_ref(m)))
            })
            .collect();
        match later.len() {
            0 => {
                let _ = write!(
                    caption,
                    "; the run goes on to {} with nothing more to show",
                    day(run_end)
                );
            }
            n => {
                let _ = write!(
                    caption,
                    "; later, to the run's end at {}: {}{}",
                    day(run_end),
                    later[..n.min(2)].join(", "),
                    if n > 2 {
                        format!(" and {} more", n - 2)
                    } else {
                        String::new()
                    }
                );
            }
        }
    }
    caption
}

/// `text` in lines of at most `max` characters, broken between words (one line when it
/// fits, and always on the report's drawing: [`render`] draws what it always drew).
fn wrap(text: &str, max: usize) -> Vec<String> {
    let mut lines: Vec<String> = vec![];
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= max => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// A shaded stretch `[a, b)` of the plot.
#[allow(clippy::too_many_arguments)]
fn shade(
    s: &mut String,
    x: &impl Fn(DateTime<Utc>) -> f64,
    a: &str,
    b: &str,
    class: &str,
    fill: &str,
    opacity: f64,
    what: &str,
) {
    let (Some(a), Some(b)) = (parse(a), parse(b)) else {
        return;
    };
    let (xa, xb) = (x(a), x(b));
    if xb > xa {
        let _ = write!(
            s,
            r##"<rect class="{class}" x="{xa:.1}" y="{MT}" width="{:.1}" height="{}" fill="{fill}" fill-opacity="{opacity}"><title>{} from {} to {}</title></rect>"##,
            (xb - xa).max(0.5),
            H - MT - MB,
            escape(what),
            escape(&crate::clock::format_instant(a)),
            escape(&crate::clock::format_instant(b))
        );
    }
}

/// What a hover on a bucket shows: its time and its counts.
fn bucket_title(c: &Chart, from: DateTime<Utc>, b: &[u64]) -> String {
    let until = from + Duration::seconds(c.bucket_secs);
    let mut dials = vec![];
    let mut inbound = vec![];
    for (k, series) in c.series.iter().enumerate() {
        let n = b.get(k + 1).copied().unwrap_or(0);
        if n == 0 {
            continue;
        }
        match series.strip_prefix("inbound_") {
            Some(how) => inbound.push((how.replace('_', " "), n)),
            None => dials.push((series.replace('_', " "), n)),
        }
    }
    let total = |v: &[(String, u64)]| v.iter().map(|(_, n)| n).sum::<u64>();
    let list = |v: &[(String, u64)]| {
        v.iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = format!(
        "{} to {} UTC",
        from.format("%a %-d %b %H:%M"),
        until.format("%H:%M")
    );
    if !dials.is_empty() {
        let _ = write!(out, ": {} dials ({})", total(&dials), list(&dials));
    }
    if !inbound.is_empty() {
        let _ = write!(
            out,
            "{} {} inbound calls ({})",
            if dials.is_empty() { ":" } else { ";" },
            total(&inbound),
            list(&inbound)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart() -> Chart {
        Chart {
            from: "2026-03-02T08:30:00.000Z".into(),
            until: "2026-03-04T08:00:00.000Z".into(),
            run_until: "2026-03-04T08:00:00.000Z".into(),
            bucket_secs: 1_800,
            series: vec!["connected".into(), "busy".into(), "in_progress".into()],
            buckets: vec![vec![1, 6, 12, 0], vec![2, 0, 6, 3]],
            windows: vec![[
                "2026-03-02T08:30:00.000Z".into(),
                "2026-03-02T20:00:00.000Z".into(),
            ]],
            faults: vec![],
            marks: vec![Mark {
                n: 2,
                at: "2026-03-02T08:30:00.000Z".into(),
                kind: "status".into(),
                subject: "Browser test".into(),
                detail: "scheduled -> active".into(),
            }],
        }
    }

    fn count(svg: &str, part: &str) -> usize {
        svg.matches(part).count()
    }

    #[test]
    fn the_report_draws_what_it_always_drew() {
        let svg = render(&chart());
        assert_eq!(svg, render_in(&chart(), Frame::REPORT));
        assert!(svg.contains(r#"viewBox="0 0 1000 380""#), "{svg}");
        assert!(
            svg.contains(
                r##"class="window" x="56.0" y="70" width="224.7" height="264" fill="#fff3c4""##
            ),
            "{svg}"
        );
        assert_eq!(count(&svg, r#"class="caption""#), 1);
        assert!(count(&svg, r#"class="tick""#) > 3);
    }

    #[test]
    fn a_narrow_drawing_keeps_its_text_size_with_fewer_ticks_and_a_wrapped_caption() {
        let svg = render_in(
            &chart(),
            Frame {
                width: 360,
                window_fill: Frame::NEUTRAL_WINDOWS,
            },
        );
        assert!(
            svg.contains(r#"viewBox="0 0 360 394""#),
            "two caption lines: {svg}"
        );
        assert!(svg.contains(r##"fill="#e8ecf1""##), "{svg}");
        assert!(!svg.contains("#fff3c4"));
        assert!(count(&svg, r#"class="tick""#) <= 4, "{svg}");
        assert_eq!(count(&svg, r#"class="caption""#), 2, "{svg}");
        assert_eq!(
            count(&svg, r#"font-size="11""#),
            count(&svg, "font-size="),
            "{svg}"
        );
        for line in svg.split(r#"class="caption""#).skip(1) {
            let text = &line[line.find('>').unwrap() + 1..line.find("</text>").unwrap()];
            assert!(
                ML + text.chars().count() as f64 * CHAR_W <= 360.0,
                "{text} fits"
            );
        }
        assert!(
            svg.contains(r##"series-in_progress" fill="#64b5f6""##),
            "{svg}"
        );
        assert!(
            svg.contains("busy 6, in progress 3"),
            "the hover's words: {svg}"
        );
        // Out of bounds: the nearest width drawn.
        let tiny = render_in(
            &chart(),
            Frame {
                width: 10,
                window_fill: Frame::NEUTRAL_WINDOWS,
            },
        );
        assert!(tiny.contains(r#"viewBox="0 0 280 "#), "{tiny}");
    }

    #[test]
    fn captions_wrap_between_words() {
        assert_eq!(
            wrap("per 30 minutes (UTC)", 9),
            ["per 30", "minutes", "(UTC)"]
        );
        assert_eq!(wrap("one line", usize::MAX), ["one line"]);
    }
}
