//! Checks requests against every rule of the interface, reporting all violations at once.
//!
//! Bodies are read as `serde_json::Value` and walked field by field, so that a missing field,
//! a wrong type and a broken limit elsewhere in the same body are all reported together,
//! each with its exact `loc` (`["body","app_config","connection_configs",0,"weight"]`) and a
//! stable `type` (see [`crate::error::ErrorType`]). A successful check yields the validated
//! domain types of [`crate::model`]. The same rules apply to typed wire values through the
//! `TryFrom` impls of `typed.rs`.
//!
//! Types are strict: JSON strings are not coerced to numbers, booleans are not numbers; an
//! integral float (`2.0`) is accepted where an integer is expected (assumed).
//!
//! - [`limits`]: every limit of the interface, as constants.
//! - [`outbound_request`], [`campaign_create`], [`campaign_patch`], [`campaign_status`],
//!   [`deployment_create`], [`deployment_patch`], [`deployment_status`],
//!   [`transformation_config`], [`cohort_stream`]: bodies; a PATCH body's fields are merged
//!   onto the resource one at a time by `patch.rs`.
//! - [`campaign_list_query`], [`deployment_list_query`], [`cohort_list_query`],
//!   [`cohort_files_query`]: query strings.
//! - [`sim`]: bodies and queries of the simulation API; [`fault_rule`]: its fault rules.
//! - [`unknown_fields`]: the fields lax mode ignores, as strict mode would report them.

mod campaign;
mod cohort;
mod deployment;
mod faults;
pub mod limits;
mod outbound;
mod patch;
mod query;
pub mod sim;
mod typed;
mod unknown;

pub(crate) use campaign::campaign_create_unchecked_times;
pub use campaign::{campaign_create, campaign_patch, campaign_status, retry_policy};
pub use cohort::{cohort_stream, transformation_config};
pub use deployment::{deployment_create, deployment_patch, deployment_status};
pub use faults::{
    FAULT_DELAY_MAX_MS, FAULT_RATE_MAX, FAULT_RETRY_AFTER_MAX_SECONDS, FAULT_STATUSES, fault_rule,
    fault_rule_value,
};
pub use outbound::outbound_request;
pub use query::{
    JOURNAL_STATUS_MAX, JournalFilter, ListParams, campaign_list_query, cohort_files_query,
    cohort_list_query, deployment_list_query, journal_query, key_service_calls_query,
    live_chart_query,
};
pub use unknown::unknown_fields;

use chrono::{DateTime, NaiveDateTime, Utc};
use serde_json::{Map, Value};

use crate::domain::phone::{self, E164};
use crate::domain::schedule::{self, CallingWindow, TimeOfDay, WeekdaySet};
use crate::error::{ErrorType, Loc, ValidationErrors};
use crate::model::{Description, Name, WebhookTarget};
use crate::wire::JsonObject;

/// How strictly to read requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// Refuse fields that are not part of the request (`extra_forbidden`). Off by default:
    /// unknown fields are ignored, as the platform does; [`unknown_fields`] still reports
    /// what was ignored (the request journal shows it).
    pub strict: bool,
}

/// Collects failures while a request is walked.
#[derive(Debug, Default)]
pub(crate) struct Ctx {
    pub(crate) errors: ValidationErrors,
    strict: bool,
}

/// Formats a bound the way the messages show it: `500`, `0.1`.
fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

impl Ctx {
    pub(crate) fn new(opts: Options) -> Self {
        Ctx {
            errors: ValidationErrors::new(),
            strict: opts.strict,
        }
    }

    /// The value when nothing failed, else every failure.
    pub(crate) fn into_result<T>(self, value: Option<T>) -> Result<T, ValidationErrors> {
        match value {
            Some(v) if self.errors.is_empty() => Ok(v),
            _ => Err(self.errors),
        }
    }

    pub(crate) fn add(&mut self, loc: &Loc, t: ErrorType, msg: impl Into<String>) {
        self.errors.add(loc, t, msg);
    }

    pub(crate) fn value_error(&mut self, loc: &Loc, msg: impl std::fmt::Display) {
        self.errors.value_error(loc, msg);
    }

    /// A structured object. In strict mode, keys not in `known` are reported.
    pub(crate) fn object<'v>(
        &mut self,
        v: &'v Value,
        loc: &Loc,
        known: &[&str],
    ) -> Option<&'v Map<String, Value>> {
        match v {
            Value::Object(m) => {
                if self.strict {
                    for k in m.keys() {
                        if !known.contains(&k.as_str()) {
                            self.add(
                                &loc.at(k.as_str()),
                                ErrorType::ExtraForbidden,
                                "Extra inputs are not permitted",
                            );
                            self.errors.note_known_fields(loc, known);
                        }
                    }
                }
                Some(m)
            }
            _ => {
                self.add(
                    loc,
                    ErrorType::ModelType,
                    "Input should be a valid dictionary or object to extract fields from",
                );
                None
            }
        }
    }

    /// A free-form object (agent variables, metadata).
    pub(crate) fn dict(&mut self, v: &Value, loc: &Loc) -> Option<JsonObject> {
        match v {
            Value::Object(m) => Some(m.clone()),
            _ => {
                self.add(
                    loc,
                    ErrorType::DictType,
                    "Input should be a valid dictionary",
                );
                None
            }
        }
    }

    /// A required field: `missing` when absent. A `null` is passed on, for the typed check
    /// to refuse.
    pub(crate) fn required<'v>(
        &mut self,
        m: &'v Map<String, Value>,
        key: &str,
        loc: &Loc,
    ) -> Option<&'v Value> {
        match m.get(key) {
            Some(v) => Some(v),
            None => {
                self.add(&loc.at(key), ErrorType::Missing, "Field required");
                None
            }
        }
    }

    /// An optional field: `None` when absent or `null`.
    pub(crate) fn optional<'v>(m: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
        match m.get(key) {
            None | Some(Value::Null) => None,
            Some(v) => Some(v),
        }
    }

    pub(crate) fn string<'v>(&mut self, v: &'v Value, loc: &Loc) -> Option<&'v str> {
        match v {
            Value::String(s) => Some(s),
            _ => {
                self.add(loc, ErrorType::StringType, "Input should be a valid string");
                None
            }
        }
    }

    /// A string of at least one character.
    /// A string of at least one character without NUL (an id or a column name: text that
    /// tools cut at NUL, so two different values could be taken for one).
    pub(crate) fn nonempty_string(&mut self, v: &Value, loc: &Loc) -> Option<String> {
        let s = self.string(v, loc)?;
        let problem = if s.is_empty() {
            crate::model::TextError::TooShort
        } else if s.contains('\0') {
            crate::model::TextError::Nul
        } else {
            return Some(s.to_string());
        };
        self.add(loc, problem.error_type(), problem.message());
        None
    }

    pub(crate) fn int(&mut self, v: &Value, loc: &Loc) -> Option<i64> {
        match v {
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Some(i)
                } else if let Some(f) = n.as_f64() {
                    if f.fract() == 0.0 && f.abs() < 9.0e15 {
                        Some(f as i64)
                    } else if f.fract() != 0.0 {
                        self.add(
                            loc,
                            ErrorType::IntFromFloat,
                            "Input should be a valid integer, got a number with a fractional part",
                        );
                        None
                    } else {
                        self.add(
                            loc,
                            ErrorType::IntType,
                            "Input should be a valid integer, the number is too large",
                        );
                        None
                    }
                } else {
                    // u64 beyond i64
                    self.add(
                        loc,
                        ErrorType::IntType,
                        "Input should be a valid integer, the number is too large",
                    );
                    None
                }
            }
            _ => {
                self.add(loc, ErrorType::IntType, "Input should be a valid integer");
                None
            }
        }
    }

    pub(crate) fn number(&mut self, v: &Value, loc: &Loc) -> Option<f64> {
        match v {
            Value::Number(n) => n.as_f64(),
            _ => {
                self.add(loc, ErrorType::FloatType, "Input should be a valid number");
                None
            }
        }
    }

    pub(crate) fn boolean(&mut self, v: &Value, loc: &Loc) -> Option<bool> {
        match v {
            Value::Bool(b) => Some(*b),
            _ => {
                self.add(loc, ErrorType::BoolType, "Input should be a valid boolean");
                None
            }
        }
    }

    pub(crate) fn array<'v>(&mut self, v: &'v Value, loc: &Loc) -> Option<&'v [Value]> {
        match v {
            Value::Array(a) => Some(a),
            _ => {
                self.add(loc, ErrorType::ListType, "Input should be a valid list");
                None
            }
        }
    }

    /// A list with at least `min` and at most `max` items.
    pub(crate) fn array_len<'v>(
        &mut self,
        v: &'v Value,
        loc: &Loc,
        min: usize,
        max: Option<usize>,
    ) -> Option<&'v [Value]> {
        let a = self.array(v, loc)?;
        if a.len() < min {
            let s = if min == 1 { "" } else { "s" };
            self.add(
                loc,
                ErrorType::TooShort,
                format!(
                    "List should have at least {min} item{s} after validation, not {}",
                    a.len()
                ),
            );
            return None;
        }
        if let Some(max) = max
            && a.len() > max
        {
            self.add(
                loc,
                ErrorType::TooLong,
                format!(
                    "List should have at most {max} items after validation, not {}",
                    a.len()
                ),
            );
            return None;
        }
        Some(a)
    }

    /// Reports `x < min` or `x > max`; answers whether `x` is inside.
    pub(crate) fn bounds(&mut self, x: f64, loc: &Loc, min: Option<f64>, max: Option<f64>) -> bool {
        if let Some(min) = min
            && x < min
        {
            self.add(
                loc,
                ErrorType::GreaterThanEqual,
                format!("Input should be greater than or equal to {}", fmt_num(min)),
            );
            return false;
        }
        if let Some(max) = max
            && x > max
        {
            self.add(
                loc,
                ErrorType::LessThanEqual,
                format!("Input should be less than or equal to {}", fmt_num(max)),
            );
            return false;
        }
        true
    }

    /// An integer in `min..=max`.
    pub(crate) fn int_in(
        &mut self,
        v: &Value,
        loc: &Loc,
        min: Option<i64>,
        max: Option<i64>,
    ) -> Option<i64> {
        let i = self.int(v, loc)?;
        self.bounds(i as f64, loc, min.map(|m| m as f64), max.map(|m| m as f64))
            .then_some(i)
    }

    /// An integer in `min..=max` that fits a `u32`.
    pub(crate) fn u32_in(&mut self, v: &Value, loc: &Loc, min: u32, max: u32) -> Option<u32> {
        self.int_in(v, loc, Some(min.into()), Some(max.into()))
            .map(|i| i as u32)
    }

    /// A number in `min..=max`.
    pub(crate) fn number_in(&mut self, v: &Value, loc: &Loc, min: f64, max: f64) -> Option<f64> {
        let x = self.number(v, loc)?;
        self.bounds(x, loc, Some(min), Some(max)).then_some(x)
    }

    /// One of a fixed set of strings.
    pub(crate) fn choice<T: Copy>(
        &mut self,
        v: &Value,
        loc: &Loc,
        options: &[(&'static str, T)],
    ) -> Option<T> {
        if let Value::String(s) = v
            && let Some((_, t)) = options.iter().find(|(name, _)| name == s)
        {
            return Some(*t);
        }
        self.add(
            loc,
            ErrorType::Enum,
            enum_message(options.iter().map(|(n, _)| *n)),
        );
        None
    }

    /// A name: pattern `^[\w\- ]{1,50}$`.
    pub(crate) fn name(&mut self, v: &Value, loc: &Loc) -> Option<Name> {
        let s = self.string(v, loc)?;
        match Name::parse(s) {
            Ok(n) => Some(n),
            Err(e) => {
                self.add(loc, e.error_type(), e.message());
                None
            }
        }
    }

    /// An optional description (null allowed), at most 150 characters.
    pub(crate) fn description(&mut self, v: Option<&Value>, loc: &Loc) -> Option<Description> {
        let v = v?;
        let s = self.string(v, loc)?;
        match Description::parse(s) {
            Ok(d) => Some(d),
            Err(e) => {
                self.add(loc, e.error_type(), e.message());
                None
            }
        }
    }

    /// An agent version: an integer of at least 1.
    pub(crate) fn app_version(&mut self, v: &Value, loc: &Loc) -> Option<i64> {
        self.int_in(v, loc, Some(limits::APP_VERSION_MIN), None)
    }

    /// A strict E.164 number.
    pub(crate) fn e164(&mut self, v: &Value, loc: &Loc) -> Option<E164> {
        let s = self.string(v, loc)?;
        match phone::parse_e164(s) {
            Ok(p) => Some(p),
            Err(e) => {
                self.value_error(loc, e);
                None
            }
        }
    }

    /// A list of at least one strict E.164 number, without repeats.
    pub(crate) fn e164_list(&mut self, v: &Value, loc: &Loc) -> Option<Vec<E164>> {
        let items = self.array_len(v, loc, 1, None)?;
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match self.e164(item, &loc.at(i)) {
                Some(p) if out.contains(&p) => {
                    self.value_error(&loc.at(i), format_args!("{p} is listed twice"));
                    ok = false;
                }
                Some(p) => out.push(p),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// An ISO 8601 date-time with an offset.
    pub(crate) fn timestamp(&mut self, v: &Value, loc: &Loc) -> Option<DateTime<Utc>> {
        let s = self.string(v, loc)?;
        if let Ok(t) = DateTime::parse_from_rfc3339(s) {
            return Some(t.with_timezone(&Utc));
        }
        let naive = NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f")
            .or_else(|_| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f"));
        if naive.is_ok() {
            self.add(
                loc,
                ErrorType::TimezoneAware,
                "Input should have timezone info, for example 2026-03-01T09:00:00Z",
            );
        } else {
            self.add(
                loc,
                ErrorType::DatetimeParsing,
                "Input should be a valid datetime in ISO 8601 form, for example 2026-03-01T09:00:00Z",
            );
        }
        None
    }

    /// An `http` or `https` URL with a host.
    pub(crate) fn url(&mut self, v: &Value, loc: &Loc) -> Option<String> {
        let s = self.string(v, loc)?;
        match url::Url::parse(s) {
            Ok(u) if u.scheme() != "http" && u.scheme() != "https" => {
                self.add(
                    loc,
                    ErrorType::UrlScheme,
                    "URL scheme should be 'http' or 'https'",
                );
                None
            }
            Ok(u) if u.host_str().is_none_or(str::is_empty) => {
                self.add(
                    loc,
                    ErrorType::UrlParsing,
                    "Input should be a valid URL, empty host",
                );
                None
            }
            Ok(_) => Some(s.to_string()),
            Err(e) => {
                self.add(
                    loc,
                    ErrorType::UrlParsing,
                    format!("Input should be a valid URL, {e}"),
                );
                None
            }
        }
    }

    /// `webhook_config`: `{url, metadata}`.
    pub(crate) fn webhook(&mut self, v: &Value, loc: &Loc) -> Option<WebhookTarget> {
        let m = self.object(v, loc, &["url", "metadata"])?;
        let url = self
            .required(m, "url", loc)
            .and_then(|u| self.url(u, &loc.at("url")));
        let metadata = match Ctx::optional(m, "metadata") {
            Some(md) => Some(self.dict(md, &loc.at("metadata"))?),
            None => None,
        };
        Some(WebhookTarget {
            url: url?,
            metadata,
        })
    }

    /// A time of day `HH:MM`.
    pub(crate) fn time_of_day(&mut self, v: &Value, loc: &Loc) -> Option<TimeOfDay> {
        let s = self.string(v, loc)?;
        match s.parse::<TimeOfDay>() {
            Ok(t) => Some(t),
            Err(e) => {
                self.value_error(loc, e);
                None
            }
        }
    }

    /// A list of weekday names, at least one; repeats are merged.
    pub(crate) fn weekdays(&mut self, v: &Value, loc: &Loc) -> Option<WeekdaySet> {
        let items = self.array_len(v, loc, 1, Some(limits::WEEKDAYS_MAX))?;
        let mut days = Vec::new();
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            let l = loc.at(i);
            let Some(s) = self.string(item, &l) else {
                ok = false;
                continue;
            };
            match schedule::parse_weekday(s) {
                Ok(d) => days.push(d),
                Err(_) => {
                    self.add(
                        &l,
                        ErrorType::Enum,
                        enum_message(
                            crate::wire::DayOfWeek::ALL
                                .iter()
                                .map(|d| schedule::weekday_name(d.weekday())),
                        ),
                    );
                    ok = false;
                }
            }
        }
        ok.then(|| WeekdaySet::from_days(days))
    }

    /// An IANA time zone.
    pub(crate) fn timezone(&mut self, v: &Value, loc: &Loc) -> Option<chrono_tz::Tz> {
        let s = self.string(v, loc)?;
        match schedule::parse_timezone(s) {
            Ok(tz) => Some(tz),
            Err(e) => {
                self.value_error(loc, e);
                None
            }
        }
    }

    /// A calling window from its four parts, each under its own key of `m`.
    pub(crate) fn window(
        &mut self,
        m: &Map<String, Value>,
        loc: &Loc,
        keys: WindowKeys,
    ) -> Option<CallingWindow> {
        let tz = self
            .required(m, keys.timezone, loc)
            .and_then(|v| self.timezone(v, &loc.at(keys.timezone)));
        let days = self
            .required(m, keys.days, loc)
            .and_then(|v| self.weekdays(v, &loc.at(keys.days)));
        let start = self
            .required(m, keys.start, loc)
            .and_then(|v| self.time_of_day(v, &loc.at(keys.start)));
        let end = self
            .required(m, keys.end, loc)
            .and_then(|v| self.time_of_day(v, &loc.at(keys.end)));
        let (tz, days, start, end) = (tz?, days?, start?, end?);
        match CallingWindow::new(tz, days, start, end) {
            Ok(w) => Some(w),
            Err(e) => {
                self.value_error(&loc.at(keys.end), e);
                None
            }
        }
    }
}

/// The keys of a calling window's parts in one object.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WindowKeys {
    pub(crate) timezone: &'static str,
    pub(crate) days: &'static str,
    pub(crate) start: &'static str,
    pub(crate) end: &'static str,
}

/// `allowed_schedule` of campaigns.
pub(crate) const ALLOWED_SCHEDULE_KEYS: WindowKeys = WindowKeys {
    timezone: "timezone",
    days: "allowed_days",
    start: "allowed_start_time",
    end: "allowed_end_time",
};

/// `inbound_config` of deployments.
pub(crate) const INBOUND_CONFIG_KEYS: WindowKeys = WindowKeys {
    timezone: "timezone",
    days: "allowed_days",
    start: "start_time",
    end: "end_time",
};

/// `Input should be 'a', 'b' or 'c'`.
pub(crate) fn enum_message<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let quoted: Vec<String> = names.map(|n| format!("'{n}'")).collect();
    match quoted.len() {
        0 => "Input should be a valid value".to_string(),
        1 => format!("Input should be {}", quoted[0]),
        n => format!(
            "Input should be {} or {}",
            quoted[..n - 1].join(", "),
            quoted[n - 1]
        ),
    }
}

/// Reads a request body as JSON; the failure is a `json_invalid` error at `["body", <byte offset>]`.
/// A body that is not UTF-8 (JSON is UTF-8, RFC 8259; a client that sends Latin-1 or
/// UTF-16 text) says so, at its first byte that is not, rather than as a decode error at a
/// column.
pub fn parse_json_body(bytes: &[u8]) -> Result<Value, ValidationErrors> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ValidationErrors::single(
            &Loc::body(),
            ErrorType::Missing,
            "Field required",
        ));
    }
    if let Err(e) = std::str::from_utf8(bytes) {
        let at = e.valid_up_to();
        return Err(ValidationErrors::single(
            &Loc::body().at(at),
            ErrorType::JsonInvalid,
            format!(
                "JSON decode error: the body is not UTF-8 (byte 0x{:02X} at offset {at}): a JSON body must be UTF-8 text; encode it as UTF-8",
                bytes[at]
            ),
        ));
    }
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return Err(ValidationErrors::single(
            &Loc::body().at(0),
            ErrorType::JsonInvalid,
            "JSON decode error: the body starts with a UTF-8 byte order mark (bytes EF BB BF), which JSON does not allow (RFC 8259) and editors do not show: send the JSON without it",
        ));
    }
    serde_json::from_slice(bytes).map_err(|e| {
        let offset = byte_offset(bytes, e.line(), e.column());
        // What looks right in an editor but is not JSON, said by name.
        let quoted = bytes[..offset.min(bytes.len())]
            .iter()
            .rev()
            .find(|b| !b.is_ascii_whitespace())
            == Some(&b'\'');
        let hint = if quoted || bytes.get(offset) == Some(&b'\'') {
            ": JSON strings and keys take double quotes (\"), not single quotes (')"
        } else {
            ""
        };
        ValidationErrors::single(
            &Loc::body().at(offset),
            ErrorType::JsonInvalid,
            format!("JSON decode error: {e}{hint}"),
        )
    })
}

fn byte_offset(bytes: &[u8], line: usize, column: usize) -> usize {
    let mut current = 1;
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if current == line {
            break;
        }
        if *b == b'\n' {
            current += 1;
            start = i + 1;
        }
    }
    (start + column.saturating_sub(1)).min(bytes.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enum_messages() {
        assert_eq!(
            enum_message(["agent"].into_iter()),
            "Input should be 'agent'"
        );
        assert_eq!(
            enum_message(["pause", "resume", "cancel"].into_iter()),
            "Input should be 'pause', 'resume' or 'cancel'"
        );
    }

    #[test]
    fn a_body_that_is_not_utf8_says_so_at_its_first_such_byte() {
        let e = parse_json_body(b"{\"name\": \"Jos\xe9\"}").unwrap_err();
        let d = &e.details()[0];
        assert_eq!(d.error_type, "json_invalid");
        assert_eq!(
            d.loc,
            vec![
                crate::error::LocItem::Key("body".into()),
                crate::error::LocItem::Index(13)
            ]
        );
        assert!(
            d.msg.contains("not UTF-8 (byte 0xE9 at offset 13)"),
            "{}",
            d.msg
        );
        assert!(d.msg.contains("must be UTF-8"), "{}", d.msg);
    }

    #[test]
    fn what_looks_right_in_an_editor_but_is_not_json_is_named() {
        let e = parse_json_body(b"\xEF\xBB\xBF{\"name\": \"a\"}").unwrap_err();
        assert!(e.details()[0].msg.contains("byte order mark"), "{e:?}");
        for body in [&b"{'name': 'a'}"[..], b"{\"name\": 'a'}"] {
            let e = parse_json_body(body).unwrap_err();
            assert!(e.details()[0].msg.contains("double quotes"), "{e:?}");
        }
        let e = parse_json_body(b"{\"name\": }").unwrap_err();
        assert!(!e.details()[0].msg.contains("double quotes"), "{e:?}");
    }

    #[test]
    fn json_errors_point_at_the_byte() {
        let e = parse_json_body(b"{\n  \"a\": }").unwrap_err();
        let d = &e.details()[0];
        assert_eq!(d.error_type, "json_invalid");
        assert_eq!(
            d.loc,
            vec![
                crate::error::LocItem::Key("body".into()),
                crate::error::LocItem::Index(9)
            ]
        );
        let e = parse_json_body(b"  ").unwrap_err();
        assert_eq!(e.details()[0].error_type, "missing");
    }

    #[test]
    fn ints_accept_integral_floats_only() {
        let mut c = Ctx::default();
        let loc = Loc::body().at("x");
        assert_eq!(c.int(&serde_json::json!(3), &loc), Some(3));
        assert_eq!(c.int(&serde_json::json!(3.0), &loc), Some(3));
        assert_eq!(c.int(&serde_json::json!(3.5), &loc), None);
        assert_eq!(c.int(&serde_json::json!("3"), &loc), None);
        assert_eq!(c.int(&serde_json::json!(true), &loc), None);
        let types: Vec<_> = c
            .errors
            .details()
            .iter()
            .map(|d| d.error_type.as_str())
            .collect();
        assert_eq!(types, ["int_from_float", "int_type", "int_type"]);
    }

    #[test]
    fn bounds_are_inclusive_and_messages_show_them() {
        let mut c = Ctx::default();
        let loc = Loc::body().at("x");
        assert_eq!(
            c.number_in(&serde_json::json!(0.1), &loc, 0.1, 500.0),
            Some(0.1)
        );
        assert_eq!(
            c.number_in(&serde_json::json!(500), &loc, 0.1, 500.0),
            Some(500.0)
        );
        assert_eq!(
            c.number_in(&serde_json::json!(0.09), &loc, 0.1, 500.0),
            None
        );
        assert_eq!(
            c.number_in(&serde_json::json!(500.01), &loc, 0.1, 500.0),
            None
        );
        let msgs: Vec<_> = c.errors.details().iter().map(|d| d.msg.as_str()).collect();
        assert_eq!(
            msgs,
            [
                "Input should be greater than or equal to 0.1",
                "Input should be less than or equal to 500"
            ]
        );
    }

    #[test]
    fn strict_mode_reports_unknown_keys() {
        let v = serde_json::json!({"url": "https://x.test", "extra": 1});
        let mut lax = Ctx::new(Options { strict: false });
        assert!(lax.webhook(&v, &Loc::body().at("webhook_config")).is_some());
        assert!(lax.errors.is_empty());
        let mut strict = Ctx::new(Options { strict: true });
        strict.webhook(&v, &Loc::body().at("webhook_config"));
        let d = &strict.errors.details()[0];
        assert_eq!(d.error_type, "extra_forbidden");
        assert_eq!(d.loc.len(), 3);
        // The fields the object takes go with the failure (not in the 422 body).
        let known = strict
            .errors
            .known_fields_at(Loc::body().at("webhook_config").items())
            .expect("known fields of the object");
        assert!(known.iter().any(|f| f == "url"), "{known:?}");
        assert_eq!(strict.errors.known_fields_at(Loc::body().items()), None);
    }

    #[test]
    fn urls() {
        let mut c = Ctx::default();
        let loc = Loc::body().at("url");
        assert!(
            c.url(&serde_json::json!("https://hooks.example.com/a?b=1"), &loc)
                .is_some()
        );
        assert!(
            c.url(&serde_json::json!("http://127.0.0.1:8080/x"), &loc)
                .is_some()
        );
        assert!(c.url(&serde_json::json!("ftp://x.test"), &loc).is_none());
        assert!(c.url(&serde_json::json!("not a url"), &loc).is_none());
        let types: Vec<_> = c
            .errors
            .details()
            .iter()
            .map(|d| d.error_type.as_str())
            .collect();
        assert_eq!(types, ["url_scheme", "url_parsing"]);
    }
}
