//! The chart of a scenario run as inline SVG, from one input, [`Chart`] (plain data: no
//! scenario, no runner): dials and inbound calls per time bucket stacked by result; the
//! calling windows and the key-service fault periods shaded; the timeline's actions and
//! status changes as lines labelled with their row numbers in the timeline table and a short
//! text (several at one instant share a line); time ticks on round minutes, hours or days;
//! a hover on a bucket shows its time and counts. The chart covers the part of the run with
//! activity and says where the run ends when it goes on without any.
//!
//! Nothing but the data comes in, and nothing outside the `<svg>` is needed (no script, no
//! style sheet), so the same chart can be drawn anywhere the report's JSON is.

use std::fmt::Write;

use chrono::{DateTime, Duration, Utc};
use contracts::report::junit::escape;
use serde::Serialize;

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
    /// `inbound_answered` and `inbound_not_answered`.
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

/// Width of the drawing.
const W: f64 = 1000.0;
/// Height of the drawing.
const H: f64 = 380.0;
/// Margins: left, right, top (where the labels of the marks go), bottom.
const ML: f64 = 56.0;
const MR: f64 = 16.0;
const MT: f64 = 70.0;
const MB: f64 = 46.0;
/// The rows of mark labels above the plot.
const LANES: usize = 3;
/// About the width of one character of the labels (11 units high), to keep them apart and
/// inside the drawing.
const CHAR_W: f64 = 6.4;
/// The longest label text, in characters.
const LABEL_CHARS: usize = 30;
/// Marks closer than this (drawing units) share a line and a label: their numbers alone
/// then always fit in the lanes.
const CLUSTER: f64 = 18.0;

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
        "inbound_answered" => "#00838f",
        "inbound_not_answered" => "#80deea",
        _ => "#555555",
    }
}

/// The colour of a mark's line and number.
fn mark_colour(kind: &str) -> &'static str {
    match kind {
        "fault" => "#c62828",
        "restart" => "#6a1b9a",
        "status" => "#1565c0",
        _ => "#424242",
    }
}

fn parse(t: &str) -> Option<DateTime<Utc>> {
    t.parse().ok()
}

/// Tick steps the time axis chooses from (seconds): the smallest giving at most eight.
const TICK_STEPS: [i64; 16] = [
    60, 120, 300, 600, 900, 1_800, 3_600, 7_200, 10_800, 21_600, 43_200, 86_400, 172_800, 345_600,
    604_800, 1_209_600,
];

/// The round ticks of `[t0, t1]`: every multiple of the step (from midnight UTC; weeks from
/// a Monday), and the step.
pub fn ticks(t0: DateTime<Utc>, t1: DateTime<Utc>) -> (i64, Vec<DateTime<Utc>>) {
    let span = (t1 - t0).num_seconds().max(1);
    let step = TICK_STEPS
        .iter()
        .copied()
        .find(|s| span / s <= 8)
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
fn tick_label(t: DateTime<Utc>, step: i64, span: i64) -> String {
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

/// The chart as an `<svg>` element.
pub fn render(c: &Chart) -> String {
    let (Some(t0), Some(t1), Some(run_end)) =
        (parse(&c.from), parse(&c.until), parse(&c.run_until))
    else {
        return String::new();
    };
    let span = (t1 - t0).num_seconds().max(1) as f64;
    let x = |t: DateTime<Utc>| {
        ML + ((t - t0).num_seconds() as f64 / span).clamp(0.0, 1.0) * (W - ML - MR)
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
    let (plot_w, plot_h) = (W - ML - MR, H - MT - MB);
    let (step, tick_times) = ticks(t0, t1);
    let mut s = String::with_capacity(16 * 1024 + c.buckets.len() * 300);
    let _ = write!(
        s,
        r##"<svg id="dials-chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="100%" role="img" aria-label="Dials and inbound calls over time by result" data-tick-secs="{step}" font-family="system-ui, sans-serif">"##
    );
    let _ = write!(
        s,
        r##"<rect class="plot" x="{ML}" y="{MT}" width="{plot_w}" height="{plot_h}" fill="#fafafa" stroke="#ccc"/>"##
    );
    // Calling windows, then fault periods over them.
    s.push_str(r##"<g class="windows">"##);
    for [a, b] in &c.windows {
        shade(&mut s, &x, a, b, "window", "#fff3c4", 1.0, "calling window");
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
            W - MR,
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
    marks(&mut s, c, &x);
    // Time axis.
    let span_secs = (t1 - t0).num_seconds();
    for t in &tick_times {
        let label = tick_label(*t, step, span_secs);
        let xx = x(*t);
        let half = label.chars().count() as f64 * CHAR_W / 2.0;
        let anchor = if xx - half < 0.0 {
            "start"
        } else if xx + half > W {
            "end"
        } else {
            "middle"
        };
        let _ = write!(
            s,
            r##"<text class="tick" data-t="{}" x="{xx:.1}" y="{}" font-size="11" text-anchor="{anchor}" fill="#444">{}</text>"##,
            contracts::clock::format_instant(*t),
            H - MB + 16.0,
            escape(&label)
        );
    }
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
    let _ = write!(
        s,
        r##"<text class="caption" x="{ML}" y="{}" font-size="11" fill="#444">{}</text>"##,
        H - 8.0,
        escape(&caption)
    );
    s.push_str("</svg>");
    s
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
            escape(&contracts::clock::format_instant(a)),
            escape(&contracts::clock::format_instant(b))
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
            None => dials.push((series.clone(), n)),
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

/// The marks: a line per instant (marks closer than [`CLUSTER`] share one), labelled above
/// the plot with the row numbers of the timeline and a short text, each label a link to its
/// rows. Labels go in the first of [`LANES`] rows where they run into no other; a label
/// keeps its text only when the numbers of the lines it reaches over still find a place,
/// so that every line has at least its numbers.
fn marks(s: &mut String, c: &Chart, x: &impl Fn(DateTime<Utc>) -> f64) {
    let t1 = parse(&c.until);
    let shown: Vec<(f64, &Mark)> = c
        .marks
        .iter()
        .filter_map(|m| {
            parse(&m.at)
                .filter(|t| t1.is_none_or(|e| *t <= e))
                .map(|t| (x(t), m))
        })
        .collect();
    let mut clusters: Vec<(f64, Vec<Mark>)> = vec![];
    for (xx, m) in shown {
        match clusters.last_mut() {
            Some((x0, group)) if xx - *x0 < CLUSTER => group.push(m.clone()),
            _ => clusters.push((xx, vec![m.clone()])),
        }
    }
    let numbers: Vec<String> = clusters
        .iter()
        .map(|(_, g)| match (g.first(), g.last()) {
            (Some(a), Some(b)) if a.n != b.n => format!("{}\u{2013}{}", a.n, b.n),
            (Some(a), _) => a.n.to_string(),
            _ => String::new(),
        })
        .collect();
    let mut lanes = Lanes::default();
    s.push_str(r##"<g class="marks">"##);
    for (k, (xx, group)) in clusters.iter().enumerate() {
        let xx = *xx;
        // The kind that says most: a status change, a fault, a restart, an action.
        let kind = ["status", "fault", "restart", "action"]
            .into_iter()
            .find(|kd| group.iter().any(|m| m.kind == *kd))
            .unwrap_or("action");
        let stroke = mark_colour(kind);
        let title: Vec<String> = group
            .iter()
            .map(|m| format!("{}. {} {} {}: {}", m.n, m.at, m.kind, m.subject, m.detail))
            .collect();
        let title = escape(&title.join("\n"));
        let _ = write!(
            s,
            r##"<line class="mark mark-{kind}" x1="{xx:.1}" x2="{xx:.1}" y1="{}" y2="{}" stroke="{stroke}" stroke-dasharray="4 3"><title>{title}</title></line>"##,
            MT - 6.0,
            H - MB
        );
        let full = truncate(&format!("{} {}", numbers[k], summary(group)), LABEL_CHARS);
        let later: Vec<(f64, &str)> = clusters[k + 1..]
            .iter()
            .zip(&numbers[k + 1..])
            .map(|((x, _), n)| (*x, n.as_str()))
            .collect();
        let text_fits = lanes
            .place(xx, &full)
            .filter(|(lane, _)| {
                let mut after = lanes.clone();
                after.take(*lane, xx, &full);
                after.all_numbers_fit(&later)
            })
            .map(|(lane, _)| lane);
        let (lane, text) = match text_fits {
            Some(lane) => (lane, full),
            None => {
                let n = numbers[k].clone();
                let lane = lanes
                    .place(xx, &n)
                    .map_or_else(|| lanes.emptiest(), |(l, _)| l);
                (lane, n)
            }
        };
        let (anchor, tx) = lanes.take(lane, xx, &text);
        let ty = 16.0 + lane as f64 * 17.0;
        let _ = write!(
            s,
            r##"<a href="#t{}"><title>{title}</title><text class="mark-label" data-n="{}" x="{tx:.1}" y="{ty}" font-size="11" text-anchor="{anchor}" fill="{stroke}">{}</text></a><line x1="{xx:.1}" x2="{xx:.1}" y1="{}" y2="{}" stroke="{stroke}" stroke-width="0.6"/>"##,
            group[0].n,
            numbers[k],
            escape(&text),
            ty + 3.0,
            MT - 6.0
        );
    }
    s.push_str("</g>");
}

/// The rows of mark labels: where each one's last label ends.
#[derive(Clone)]
struct Lanes([f64; LANES]);

impl Default for Lanes {
    fn default() -> Self {
        Lanes([f64::NEG_INFINITY; LANES])
    }
}

impl Lanes {
    /// Where a label `text` for the line at `xx` goes: to the line's right, or to its left
    /// near the right edge; `(left end, anchor, x)`.
    fn extent(xx: f64, text: &str) -> (f64, &'static str, f64) {
        let w = text.chars().count() as f64 * CHAR_W;
        if xx + 3.0 + w <= W - 2.0 {
            (xx + 3.0, "start", xx + 3.0)
        } else {
            (xx - 3.0 - w, "end", xx - 3.0)
        }
    }

    /// The first lane where `text` runs into no label, and its left end.
    fn place(&self, xx: f64, text: &str) -> Option<(usize, f64)> {
        let (left, _, _) = Self::extent(xx, text);
        if left < 2.0 {
            return None;
        }
        (0..LANES)
            .find(|l| self.0[*l] + 4.0 <= left)
            .map(|l| (l, left))
    }

    /// Puts `text` in `lane`: its anchor and x.
    fn take(&mut self, lane: usize, xx: f64, text: &str) -> (&'static str, f64) {
        let (left, anchor, tx) = Self::extent(xx, text);
        let w = text.chars().count() as f64 * CHAR_W;
        self.0[lane] = self.0[lane].max(left + w);
        (anchor, tx)
    }

    /// The lane that ends first.
    fn emptiest(&self) -> usize {
        (0..LANES)
            .min_by(|a, b| self.0[*a].total_cmp(&self.0[*b]))
            .unwrap_or(0)
    }

    /// Whether the numbers of the lines `later` (by x) all find a lane after this.
    fn all_numbers_fit(mut self, later: &[(f64, &str)]) -> bool {
        let reach = self.0.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        for (xx, n) in later.iter().take_while(|(xx, _)| *xx - 60.0 <= reach) {
            match self.place(*xx, n) {
                Some((lane, _)) => {
                    self.take(lane, *xx, n);
                }
                None => return false,
            }
        }
        true
    }
}

/// A short text for marks at one instant: their status changes if any (`c: paused,
/// active`), else what they are (`c: pause`, `key service: service_unavailable on all`).
fn summary(group: &[Mark]) -> String {
    let statuses: Vec<&Mark> = group.iter().filter(|m| m.kind == "status").collect();
    let shown: Vec<&Mark> = if statuses.is_empty() {
        group.iter().collect()
    } else {
        statuses
    };
    let mut parts: Vec<(String, Vec<String>)> = vec![];
    for m in shown {
        let what = match m.kind.as_str() {
            "status" => match m.detail.split_once("-> ") {
                Some((_, to)) => to.to_string(),
                None => m.detail.split(" (").next().unwrap_or("").to_string(),
            },
            "restart" => "restart".to_string(),
            "fault" if m.detail.ends_with(" removed") => "fault over".to_string(),
            // An inbound call: `caller -> dialled: answered`.
            _ if m.detail.contains(" -> ") => m
                .detail
                .rsplit(": ")
                .next()
                .unwrap_or("")
                .split(" (")
                .next()
                .unwrap_or("")
                .to_string(),
            _ => m
                .detail
                .split([':', '('])
                .next()
                .unwrap_or("")
                .trim()
                .to_string(),
        };
        match parts.iter_mut().find(|(s, _)| *s == m.subject) {
            Some((_, v)) => {
                if !v.contains(&what) {
                    v.push(what);
                }
            }
            None => parts.push((m.subject.clone(), vec![what])),
        }
    }
    parts
        .iter()
        .map(|(s, v)| format!("{s}: {}", v.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// At most `n` characters, the last an ellipsis when cut.
fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(n - 1).collect();
        out.push('\u{2026}');
        out
    }
}

/// A round axis maximum at or above `n`.
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
    fn labels_say_what_happened_briefly() {
        let m = |n, kind: &str, subject: &str, detail: &str| Mark {
            n,
            at: "2026-03-02T09:30:00.000Z".into(),
            kind: kind.into(),
            subject: subject.into(),
            detail: detail.into(),
        };
        let group = [
            m(3, "action", "c", "pause"),
            m(4, "status", "c", "active -> paused"),
            m(5, "action", "c", "resume"),
            m(6, "status", "c", "paused -> active"),
        ];
        assert_eq!(summary(&group), "c: paused, active");
        assert_eq!(
            summary(&[m(
                7,
                "fault",
                "key service",
                "service_unavailable on all (flt-1) until x"
            )]),
            "key service: service_unavailable on all"
        );
        assert_eq!(
            summary(&[m(8, "fault", "key service", "fault flt-1 removed")]),
            "key service: fault over"
        );
        assert_eq!(
            summary(&[m(8, "action", "c", "patched: {\"name\":\"x\"}")]),
            "c: patched"
        );
        assert_eq!(
            summary(&[m(
                9,
                "action",
                "ada",
                "+919876543210 -> +14155550600: not answered (deployment_paused)"
            )]),
            "ada: not answered"
        );
        assert_eq!(truncate("abcdef", 4), "abc\u{2026}");
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
