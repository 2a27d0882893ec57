//! Times and durations in scenario files.
//!
//! A time ([`At`]) is absolute, an RFC 3339 instant (`"2026-03-02T09:00:00Z"`), or relative
//! to the scenario's `start`, a `+` and a duration (`"+1h30m"`, `"+2d"`, `"+0s"`). A duration
//! ([`Span`]) is one or more whole numbers, each with a unit: `w` (weeks), `d`, `h`, `m`,
//! `s` or `ms` (`"90s"`, `"1d12h"`, `"250ms"`).

use std::borrow::Cow;
use std::fmt;

use chrono::{DateTime, Duration, Utc};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A duration: `"90s"`, `"1d12h"`, `"250ms"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Span(pub Duration);

/// A point in simulated time: absolute (RFC 3339) or `+duration` after the scenario start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum At {
    /// An instant.
    Absolute(DateTime<Utc>),
    /// This long after the scenario's `start`.
    AfterStart(Duration),
}

impl At {
    /// The instant, given the scenario's start.
    pub(crate) fn resolve(self, start: DateTime<Utc>) -> DateTime<Utc> {
        match self {
            At::Absolute(t) => t,
            At::AfterStart(d) => start + d,
        }
    }
}

/// Parses a duration: numbers with units `w`, `d`, `h`, `m`, `s`, `ms`, largest first or
/// in any order, at least one.
pub(crate) fn parse_span(text: &str) -> Result<Duration, String> {
    let hint = "write a duration as numbers with units w, d, h, m, s or ms, such as \"90s\", \"1h30m\" or \"2d\"";
    let s = text.trim();
    if s.is_empty() {
        return Err(format!("an empty duration; {hint}"));
    }
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut total = Duration::zero();
    while i < bytes.len() {
        let digits_start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if i == digits_start {
            return Err(format!("{text:?} is not a duration; {hint}"));
        }
        let n: i64 = s[digits_start..i]
            .parse()
            .map_err(|_| format!("{text:?}: the number is too large; {hint}"))?;
        let unit_start = i;
        while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
            i += 1;
        }
        let ms_per: i64 = match &s[unit_start..i] {
            "w" => 7 * 86_400_000,
            "d" => 86_400_000,
            "h" => 3_600_000,
            "m" => 60_000,
            "s" => 1_000,
            "ms" => 1,
            "" => return Err(format!("{text:?}: the number {n} has no unit; {hint}")),
            u => return Err(format!("{text:?}: unknown unit {u:?}; {hint}")),
        };
        let part = n
            .checked_mul(ms_per)
            .filter(|ms| *ms <= 3_650 * 86_400_000)
            .ok_or_else(|| format!("{text:?} is longer than ten years"))?;
        total += Duration::milliseconds(part);
    }
    if total > Duration::days(3_650) {
        return Err(format!("{text:?} is longer than ten years"));
    }
    Ok(total)
}

/// Writes a duration the way [`parse_span`] reads it (`1d2h`, `30m`, `0s`).
pub(crate) fn format_span(d: Duration) -> String {
    let mut ms = d.num_milliseconds();
    if ms == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    if ms < 0 {
        out.push('-');
        ms = -ms;
    }
    for (unit, per) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
        ("ms", 1),
    ] {
        if ms >= per {
            out.push_str(&format!("{}{unit}", ms / per));
            ms %= per;
        }
    }
    out
}

/// Parses a time: RFC 3339, or `+` and a duration.
pub(crate) fn parse_at(text: &str) -> Result<At, String> {
    let s = text.trim();
    if let Some(rest) = s.strip_prefix('+') {
        return parse_span(rest).map(At::AfterStart);
    }
    DateTime::parse_from_rfc3339(s)
        .map(|t| At::Absolute(t.to_utc()))
        .map_err(|e| {
            if let Some(hint) = missing_offset(s) {
                return hint;
            }
            format!(
                "{text:?} is not a time ({e}); write an RFC 3339 instant such as \"2026-03-02T09:00:00Z\", or \"+\" and a duration after the scenario start such as \"+1h30m\""
            )
        })
}

/// What to write for a date and time without an offset, or a date alone: the same with `Z`
/// (UTC) or an offset such as `-05:00`; `None` for anything else.
fn missing_offset(s: &str) -> Option<String> {
    let t = s.replacen(' ', "T", 1);
    let naive = chrono::NaiveDateTime::parse_from_str(&t, "%Y-%m-%dT%H:%M:%S%.f")
        .or_else(|_| chrono::NaiveDateTime::parse_from_str(&t, "%Y-%m-%dT%H:%M"))
        .ok();
    if let Some(n) = naive {
        let w = n.format("%Y-%m-%dT%H:%M:%S");
        return Some(format!(
            "{s:?} has no offset, so it names no instant: add Z for UTC (\"{w}Z\") or the offset of its place (\"{w}-05:00\")"
        ));
    }
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .map(|d| {
            format!("{s:?} is a date without a time: write an instant such as \"{d}T00:00:00Z\"")
        })
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::Absolute(t) => f.write_str(&contracts::clock::format_instant(*t)),
            At::AfterStart(d) => write!(f, "+{}", format_span(*d)),
        }
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_span(self.0))
    }
}

struct TextVisitor<F>(F, &'static str);

impl<'de, T, F: Fn(&str) -> Result<T, String>> serde::de::Visitor<'de> for TextVisitor<F> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.1)
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<T, E> {
        (self.0)(v).map_err(E::custom)
    }

    /// An unquoted TOML date-time (toml hands it over as a one-entry table): say to quote
    /// it.
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let written = match map.next_key::<String>()? {
            Some(k) if k == "$__toml_private_datetime" => map.next_value::<String>()?,
            _ => {
                return Err(serde::de::Error::custom(format!(
                    "a table where {} is expected",
                    self.1
                )));
            }
        };
        if !self.1.starts_with("a time") {
            return Err(serde::de::Error::custom(format!(
                "a date-time ({written}) where {} is expected",
                self.1
            )));
        }
        let quoted = if written.len() > 10 && missing_offset(&written).is_some() {
            format!("\"{written}Z\" (with an offset: Z is UTC)")
        } else {
            format!("\"{written}\"")
        };
        Err(serde::de::Error::custom(format!(
            "a time is written in quotes: {quoted}"
        )))
    }
}

impl<'de> Deserialize<'de> for Span {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(TextVisitor(
            |s: &str| parse_span(s).map(Span),
            "a duration such as \"90s\" or \"1h30m\"",
        ))
    }
}

impl<'de> Deserialize<'de> for At {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(TextVisitor(
            parse_at,
            "a time: an RFC 3339 instant, or \"+\" and a duration such as \"+1h\"",
        ))
    }
}

impl Serialize for Span {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Serialize for At {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

const SPAN_PATTERN: &str = r"^\s*([0-9]+(w|d|h|m|s|ms))+\s*$";

impl JsonSchema for Span {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": SPAN_PATTERN,
            "description": "A duration: whole numbers with units w, d, h, m, s or ms, such as \"90s\", \"1h30m\", \"2d\".",
            "examples": ["90s", "1h30m", "2d"]
        })
    }
}

impl JsonSchema for At {
    fn schema_name() -> Cow<'static, str> {
        "Time".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "A simulated time: an RFC 3339 instant (\"2026-03-02T09:00:00Z\"), or \"+\" and a duration after the scenario's start (\"+1h30m\").",
            "anyOf": [
                {"format": "date-time"},
                {"pattern": r"^\s*\+([0-9]+(w|d|h|m|s|ms))+\s*$"}
            ],
            "examples": ["+1h30m", "2026-03-02T09:00:00Z"]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_and_write_alike() {
        for (text, ms) in [
            ("90s", 90_000),
            ("1h30m", 5_400_000),
            ("2d", 172_800_000),
            ("1w", 604_800_000),
            ("250ms", 250),
            ("0s", 0),
        ] {
            assert_eq!(
                parse_span(text).unwrap(),
                Duration::milliseconds(ms),
                "{text}"
            );
        }
        assert_eq!(
            format_span(Duration::milliseconds(93_784_005)),
            "1d2h3m4s5ms"
        );
        for bad in [
            "",
            "10",
            "h",
            "1x",
            "1.5h",
            "-1h",
            "99999999999999999999d",
            "4000d",
        ] {
            let err = parse_span(bad).unwrap_err();
            assert!(!err.is_empty(), "{bad}");
        }
    }

    #[test]
    fn times_are_absolute_or_after_the_start() {
        let start: DateTime<Utc> = "2026-03-02T08:00:00Z".parse().unwrap();
        assert_eq!(
            parse_at("+1h").unwrap().resolve(start),
            start + Duration::hours(1)
        );
        assert_eq!(
            parse_at("2026-03-03T00:00:00+01:00")
                .unwrap()
                .resolve(start),
            "2026-03-02T23:00:00Z".parse::<DateTime<Utc>>().unwrap()
        );
        assert!(parse_at("tomorrow").unwrap_err().contains("RFC 3339"));
        assert_eq!(parse_at("+1d2h").unwrap().to_string(), "+1d2h");
    }
}
