//! The chart's marks: a line per instant of the timeline's actions, status changes, faults
//! and restarts (marks a few units apart share one), each labelled above the plot with its
//! row numbers in the timeline and a short text, in lanes where no two labels meet.

use std::fmt::Write;

use crate::report::junit::escape;
use chrono::{DateTime, Utc};

use super::{Chart, H, MB, MT, Mark, parse};

/// The rows of mark labels above the plot.
const LANES: usize = 3;
/// About the width of one character of the labels (11 units high), to keep them apart and
/// inside the drawing.
pub(super) const CHAR_W: f64 = 6.4;
/// The longest label text, in characters.
const LABEL_CHARS: usize = 30;
/// Marks closer than this (drawing units) share a line and a label: their numbers alone
/// then always fit in the lanes.
const CLUSTER: f64 = 18.0;

/// The colour of a mark's line and number.
fn mark_colour(kind: &str) -> &'static str {
    match kind {
        "fault" => "#c62828",
        "restart" => "#6a1b9a",
        "status" => "#1565c0",
        _ => "#424242",
    }
}

/// The marks: a line per instant (marks closer than [`CLUSTER`] share one), labelled above
/// the plot with the row numbers of the timeline and a short text, each label a link to its
/// rows. Labels go in the first of [`LANES`] rows where they run into no other; a label
/// keeps its text only when the numbers of the lines it reaches over still find a place,
/// so that every line has at least its numbers.
pub(super) fn marks(s: &mut String, c: &Chart, x: &impl Fn(DateTime<Utc>) -> f64, width: f64) {
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
    let mut lanes = Lanes::new(width);
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

/// The rows of mark labels: where each one's last label ends, in a drawing `width` wide.
#[derive(Clone)]
struct Lanes {
    width: f64,
    ends: [f64; LANES],
}

impl Lanes {
    fn new(width: f64) -> Self {
        Lanes {
            width,
            ends: [f64::NEG_INFINITY; LANES],
        }
    }

    /// Where a label `text` for the line at `xx` goes: to the line's right, or to its left
    /// near the right edge; `(left end, anchor, x)`.
    fn extent(&self, xx: f64, text: &str) -> (f64, &'static str, f64) {
        let w = text.chars().count() as f64 * CHAR_W;
        if xx + 3.0 + w <= self.width - 2.0 {
            (xx + 3.0, "start", xx + 3.0)
        } else {
            (xx - 3.0 - w, "end", xx - 3.0)
        }
    }

    /// The first lane where `text` runs into no label, and its left end.
    fn place(&self, xx: f64, text: &str) -> Option<(usize, f64)> {
        let (left, _, _) = self.extent(xx, text);
        if left < 2.0 {
            return None;
        }
        (0..LANES)
            .find(|l| self.ends[*l] + 4.0 <= left)
            .map(|l| (l, left))
    }

    /// Puts `text` in `lane`: its anchor and x.
    fn take(&mut self, lane: usize, xx: f64, text: &str) -> (&'static str, f64) {
        let (left, anchor, tx) = self.extent(xx, text);
        let w = text.chars().count() as f64 * CHAR_W;
        self.ends[lane] = self.ends[lane].max(left + w);
        (anchor, tx)
    }

    /// The lane that ends first.
    fn emptiest(&self) -> usize {
        (0..LANES)
            .min_by(|a, b| self.ends[*a].total_cmp(&self.ends[*b]))
            .unwrap_or(0)
    }

    /// Whether the numbers of the lines `later` (by x) all find a lane after this.
    fn all_numbers_fit(mut self, later: &[(f64, &str)]) -> bool {
        let reach = self.ends.iter().copied().fold(f64::NEG_INFINITY, f64::max);
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
pub(super) fn summary(group: &[Mark]) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
