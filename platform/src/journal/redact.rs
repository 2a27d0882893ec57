//! What the journal keeps of a body or a query: its shape, not its secrets.
//!
//! The journal holds no API key (only whether the key was missing, invalid or valid, and
//! the configured name of a valid one), no phone number, no variable value and no free
//! text. It stays useful: every key (field name) is kept, with the structure, the types,
//! ids, enum values, timestamps, counts, statuses and error messages.
//!
//! The rules, applied to a JSON value:
//! - Under a free-form key (`agent_variables`, `metadata`, `interaction_transcript`, ...)
//!   every scalar becomes its type (`"<string>"`, `"<number>"`, `"<bool>"`); keys stay.
//! - A string is kept only under a key known to hold no customer data: ids (`*_id`), enum
//!   values (`status`, `action`, ...), timestamps (`*_at`, `*_timestamp`), names of things,
//!   error messages. Any other string becomes `"<phone>"` when it holds a phone-like run of
//!   digits, `"<url>"` under `url`, else `"<string>"`.
//! - Every kept string, and every key, has its runs of 7 or more digits (with spaces,
//!   dashes, dots, brackets or slashes between them: a phone number in any form) replaced
//!   by `<number>`; ISO dates (`2026-03-02T...`) are left alone. A number a message gives as
//!   an example (`for example '+14155550100'`) becomes a fictional number of the same form
//!   instead, so that the example still shows what to write.
//! - A number of 7 or more integer digits becomes `"<number>"` unless its key is a known
//!   count (`total`, `rejected_records`, ...).
//! - Lists keep their first [`LIST_ITEMS_KEPT`] items and say how many more there were.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// Items of a list kept in a journal entry; the rest are counted.
pub(crate) const LIST_ITEMS_KEPT: usize = 5;

/// Keys whose whole value is free-form customer data.
const FREE_FORM: &[&str] = &[
    "agent_variables",
    "app_variables",
    "app_overrides",
    "final_agent_variables",
    "initial_agent_variables",
    "output_agent_variables",
    "interaction_transcript",
    "metadata",
    "variables",
];

/// Keys whose string values (or list of strings) are kept.
const KEEP_STRINGS: &[&str] = &[
    "action",
    "allowed_days",
    "allowed_end_time",
    "allowed_start_time",
    "app_type",
    "campaign_status",
    "channel_direction",
    "code",
    "cohort_category",
    "completion_status",
    "connectivity_status",
    "created_by",
    "end_time",
    "file_type",
    "kind",
    "loc",
    "message",
    "msg",
    "name",
    "next_action_status",
    "rejection",
    "retry_on",
    "sort_by",
    "sort_order",
    "source_type",
    "start_time",
    "status",
    "timezone",
    "token_type",
    "type",
    "updated_by",
    "verdict",
];

/// Keys whose numbers are kept whatever their size.
const KEEP_NUMBERS: &[&str] = &[
    "bytes",
    "limit",
    "offset",
    "rejected_records",
    "total",
    "total_records",
    "valid_records",
];

/// Query parameters whose values are kept.
const KEEP_QUERY: &[&str] = &[
    "campaign_status",
    "file_type",
    "limit",
    "offset",
    "operation",
    "sort_by",
    "sort_order",
    "status",
    "verdict",
];

/// Whether the values of the query parameter `name` are kept (paging, sorting, filters by
/// enum; not `search`, which can hold customer data).
pub(crate) fn query_value_kept(name: &str) -> bool {
    KEEP_QUERY.contains(&name)
}

fn keeps_string(key: &str) -> bool {
    KEEP_STRINGS.contains(&key)
        || key.ends_with("_id")
        || key.ends_with("_at")
        || key.ends_with("_timestamp")
        || key.ends_with("_page_uri")
}

/// The journal's copy of a JSON body.
pub(crate) fn json(v: &Value) -> Value {
    walk(v, None)
}

fn walk(v: &Value, key: Option<&str>) -> Value {
    if key.is_some_and(|k| FREE_FORM.contains(&k)) {
        return shape(v);
    }
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (scrub(k), walk(v, Some(k))))
                .collect::<Map<_, _>>(),
        ),
        Value::Array(items) => list(items, |item| walk(item, key)),
        Value::String(s) => Value::String(string(s, key)),
        Value::Number(n) => number(n, key),
        Value::Bool(_) | Value::Null => v.clone(),
    }
}

fn list(items: &[Value], f: impl Fn(&Value) -> Value) -> Value {
    let mut out: Vec<Value> = items.iter().take(LIST_ITEMS_KEPT).map(f).collect();
    if items.len() > LIST_ITEMS_KEPT {
        out.push(Value::String(format!(
            "<{} more items>",
            items.len() - LIST_ITEMS_KEPT
        )));
    }
    Value::Array(out)
}

/// Free-form data: keys (scrubbed) and types only.
fn shape(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (scrub(k), shape(v))).collect()),
        Value::Array(items) => list(items, shape),
        Value::String(_) => Value::String("<string>".into()),
        Value::Number(_) => Value::String("<number>".into()),
        Value::Bool(_) => Value::String("<bool>".into()),
        Value::Null => Value::Null,
    }
}

fn string(s: &str, key: Option<&str>) -> String {
    match key {
        Some(k) if k.ends_with("_page_uri") => page_uri(s),
        Some(k) if keeps_string(k) => scrub(s),
        Some("url") => "<url>".into(),
        _ if digit_runs(s).next().is_some() => "<phone>".into(),
        _ => "<string>".into(),
    }
}

fn number(n: &serde_json::Number, key: Option<&str>) -> Value {
    let big = n.as_f64().is_some_and(|x| x.abs().trunc() >= 1_000_000.0);
    if big && !key.is_some_and(|k| KEEP_NUMBERS.contains(&k)) {
        Value::String("<number>".into())
    } else {
        Value::Number(n.clone())
    }
}

/// A page link with its query redacted like a request's.
fn page_uri(s: &str) -> String {
    match s.split_once('?') {
        Some((base, q)) => {
            let pairs: Vec<(String, String)> = query(query_pairs(q))
                .into_iter()
                .map(|(k, v)| (k, v.as_str().unwrap_or("").to_string()))
                .collect();
            format!(
                "{}?{}",
                scrub(base),
                serde_urlencoded::to_string(pairs).unwrap_or_default()
            )
        }
        None => scrub(s),
    }
}

/// The parameters of a raw query string, decoded (borrowed where no decoding was needed),
/// as `application/x-www-form-urlencoded` reads them: an iterator, cloned to read them
/// again (nothing is collected). A query without `%` or `+` (nearly every one:
/// `limit=20&offset=40`) has nothing to decode: it is only split, at `&` (empty pieces
/// skipped) and at the first `=` of each piece, without the decoder's work.
pub(crate) fn query_pairs(raw: &str) -> QueryPairs<'_> {
    if raw.bytes().any(|b| b == b'%' || b == b'+') {
        QueryPairs::Encoded(url::form_urlencoded::parse(raw.as_bytes()))
    } else {
        QueryPairs::Plain(contracts::operations::split_ascii(raw, b'&'))
    }
}

/// The iterator of [`query_pairs`].
#[derive(Clone)]
pub(crate) enum QueryPairs<'a> {
    /// Nothing to decode.
    Plain(contracts::operations::SplitAscii<'a>),
    /// Through the form decoder.
    Encoded(url::form_urlencoded::Parse<'a>),
}

impl<'a> Iterator for QueryPairs<'a> {
    type Item = (Cow<'a, str>, Cow<'a, str>);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            QueryPairs::Plain(pieces) => {
                let piece = pieces.find(|piece| !piece.is_empty())?;
                let (name, value) = match piece.bytes().position(|b| b == b'=') {
                    Some(at) => (&piece[..at], &piece[at + 1..]),
                    None => (piece, ""),
                };
                Some((Cow::Borrowed(name), Cow::Borrowed(value)))
            }
            QueryPairs::Encoded(parse) => parse.next(),
        }
    }
}

/// The journal's copy of a query string as kept in the ring, URL-encoded: `raw` itself when
/// it holds only parameters that cannot hold customer data and no phone-like number (the
/// usual case, without any work), else its parameters redacted as [`query`] does. Each
/// parameter's name is given to `each_name` on the way, so that a caller that judges the
/// names too (the unknown parameters) does not parse the query again.
pub(crate) fn query_kept<'a>(
    raw: &'a str,
    mut each_name: impl FnMut(Cow<'a, str>),
) -> Cow<'a, str> {
    // A phone-like run has PHONE_DIGITS digits or more, and a digit decoded from the query
    // is one or two digits in `raw` (`%3N`): a query with fewer digits holds none.
    let few_digits = raw.bytes().filter(u8::is_ascii_digit).count() < PHONE_DIGITS;
    let mut clean = true;
    for (k, v) in query_pairs(raw) {
        clean = clean
            && KEEP_QUERY.contains(&k.as_ref())
            && (few_digits || (digit_runs(&k).next().is_none() && digit_runs(&v).next().is_none()));
        each_name(k);
    }
    if clean {
        return Cow::Borrowed(raw);
    }
    Cow::Owned(
        url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(
                query(query_pairs(raw))
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or(""))),
            )
            .finish(),
    )
}

/// The journal's copy of a query string: every parameter, with its value only when the
/// parameter cannot hold customer data (`search` can).
pub(crate) fn query<'a>(
    pairs: impl Iterator<Item = (Cow<'a, str>, Cow<'a, str>)>,
) -> Map<String, Value> {
    pairs
        .map(|(k, v)| {
            let value = if KEEP_QUERY.contains(&k.as_ref()) {
                scrub(&v)
            } else {
                "<string>".into()
            };
            (scrub(&k), Value::String(value))
        })
        .collect()
}

/// `s` with every phone-like run of digits replaced by `<number>`, except a number a
/// message gives as an example (`for example '+1 415 555 0100'`), which becomes a
/// fictional number of the same form ([`fictional_like`]): the example stays an example of
/// what to write, and no digit of the original is kept.
pub(crate) fn scrub(s: &str) -> String {
    let mut runs = digit_runs(s).peekable();
    if runs.peek().is_none() {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut at = 0;
    for (start, end) in runs {
        out.push_str(&s[at..start]);
        match fictional_like(&s[start..end]).filter(|_| is_example(&s[..start])) {
            Some(f) => out.push_str(&f),
            None => out.push_str("<number>"),
        }
        at = end;
    }
    out.push_str(&s[at..]);
    out
}

/// Whether a run that follows `before` is given as an example (`for example '`, `e.g. `,
/// `such as `).
fn is_example(before: &str) -> bool {
    let before = before.trim_end_matches(['\'', '"', '`', ' ', ':']);
    ["for example", "e.g.", "such as"].iter().any(|w| {
        before
            .len()
            .checked_sub(w.len())
            .and_then(|at| before.get(at..))
            .is_some_and(|tail| tail.eq_ignore_ascii_case(w))
    })
}

/// Fictional numbers by their count of digits, each in a range kept for drama and
/// examples: the US 555-0100 to 555-0199 (`+1 415 555 0100`, national `415 555 0100`, local
/// `555 0100`) and the UK's 07700 900000 to 900999 (`+44 7700 900100`).
const FICTIONAL: [&str; 4] = ["5550100", "4155550100", "14155550100", "447700900100"];

/// A fictional number of the form of `run` (its `+`, spaces, dashes, dots and brackets at
/// their places, as many digits), when there is one of that many digits.
fn fictional_like(run: &str) -> Option<String> {
    let digits = run.bytes().filter(u8::is_ascii_digit).count();
    let mut fill = FICTIONAL.iter().find(|f| f.len() == digits)?.chars();
    Some(
        run.chars()
            .map(|c| {
                if c.is_ascii_digit() {
                    fill.next().unwrap_or('0')
                } else {
                    c
                }
            })
            .collect(),
    )
}

/// The fewest digits of a phone-like run.
const PHONE_DIGITS: usize = 7;

/// Byte ranges of runs of at least [`PHONE_DIGITS`] digits, with separators (space, `-`,
/// `.`, `(`, `)`, `/`) between digits and an optional leading `+`; not ISO dates.
fn digit_runs(s: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let b = s.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() {
            if !b[i].is_ascii_digit() {
                i += 1;
                continue;
            }
            let start = if i > 0 && b[i - 1] == b'+' { i - 1 } else { i };
            let (mut j, mut digits, mut last_digit) = (i, 0, i);
            while j < b.len() {
                if b[j].is_ascii_digit() {
                    digits += 1;
                    last_digit = j;
                } else if !matches!(b[j], b' ' | b'-' | b'.' | b'(' | b')' | b'/') {
                    break;
                }
                j += 1;
            }
            let end = last_digit + 1;
            i = end;
            if digits >= PHONE_DIGITS && !is_iso_date(&b[start..]) && !is_quantity(b, start, end) {
                return Some((start, end));
            }
        }
        None
    })
}

/// Units a message counts in: a number of them (`10485760 bytes`) is a quantity the
/// platform states, such as a limit, not a phone number.
const UNITS: [&str; 8] = [
    "bytes",
    "KiB",
    "MiB",
    "ms",
    "seconds",
    "rows",
    "characters",
    "items",
];

/// Whether `b[start..end]` is digits only, followed by a space and a unit of [`UNITS`].
fn is_quantity(b: &[u8], start: usize, end: usize) -> bool {
    b[start..end].iter().all(u8::is_ascii_digit)
        && b.get(end) == Some(&b' ')
        && UNITS.iter().any(|u| {
            let rest = &b[end + 1..];
            rest.starts_with(u.as_bytes())
                && rest.get(u.len()).is_none_or(|c| !c.is_ascii_alphanumeric())
        })
}

/// `dddd-dd-ddT`: the start of an ISO 8601 date-time.
fn is_iso_date(b: &[u8]) -> bool {
    b.len() >= 11
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
        && b[10] == b'T'
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_query_splits_into_the_pairs_the_form_decoder_gives() {
        for raw in [
            "",
            "limit=20&offset=40",
            "limit=20&&offset=40&",
            "&limit",
            "a=b=c&=x&y=",
            "search=%2B1415&limit=5",
            "search=front+desk",
            "search=caf%C3%A9&x=%ZZ",
            "search=é",
        ] {
            let decoded: Vec<(Cow<'_, str>, Cow<'_, str>)> =
                url::form_urlencoded::parse(raw.as_bytes()).collect();
            assert_eq!(query_pairs(raw).collect::<Vec<_>>(), decoded, "{raw:?}");
        }
    }

    #[test]
    fn phone_numbers_in_any_form_are_masked_and_dates_are_not() {
        assert_eq!(
            scrub("+14155550100 is listed twice"),
            "<number> is listed twice"
        );
        assert_eq!(scrub("call (415) 555-0100 now"), "call (<number> now");
        assert_eq!(scrub("415.555.0100"), "<number>");
        // A quantity with its unit is the platform's own figure, not a number of a person.
        assert_eq!(
            scrub("the request body is larger than the limit of 10485760 bytes"),
            "the request body is larger than the limit of 10485760 bytes"
        );
        assert_eq!(scrub("call 4155550100 bytesize"), "call <number> bytesize");
        assert_eq!(scrub("call 415 555 0100 bytes"), "call <number> bytes");
        assert_eq!(
            scrub("now is 2026-03-02T12:00:00Z"),
            "now is 2026-03-02T12:00:00Z"
        );
        assert_eq!(
            scrub("at most 100 items, not 250"),
            "at most 100 items, not 250"
        );
        assert_eq!(scrub("d-123456"), "d-123456");
    }

    #[test]
    fn an_example_number_stays_an_example_of_its_form() {
        assert_eq!(
            scrub(
                "'+19998887766' is not an E.164 number: write '+', the country code and the number, digits only, for example '+14155550100'"
            ),
            "'<number>' is not an E.164 number: write '+', the country code and the number, digits only, for example '+14155550100'"
        );
        assert_eq!(
            scrub("for example +1 (212) 000-9999"),
            "for example +1 (415) 555-0100",
            "the form kept, the digits fictional"
        );
        assert_eq!(scrub("e.g. +44 20 7946 0999"), "e.g. +44 77 0090 0100");
        assert_eq!(
            scrub("for example '+912345678901234'"),
            "for example '<number>'",
            "no fictional number of that many digits"
        );
        assert_eq!(scrub("call +14155550199 now"), "call <number> now");
        assert_eq!(
            scrub("é for example 4155550100"),
            "é for example 4155550100"
        );
        assert_eq!(
            scrub("éé 4155550100"),
            "éé <number>",
            "no panic on a char boundary"
        );
    }

    #[test]
    fn bodies_keep_their_shape_ids_and_enums_but_no_customer_data() {
        let body = json!({
            "app_config": {
                "app_id": "app-1", "app_version": 2, "app_type": "agent",
                "connection_config": {"connection_id": "conn", "agent_phone_number": "+14155550100"},
                "agent_variables": {"first_name": "Ada", "balance": 1234.5, "vip": true, "nested": {"pin": "9999"}},
                "app_overrides": {"initial_bot_message": "Hello Ada"}
            },
            "user_config": {"user_phone_number": "+919876543210"},
            "webhook_config": {"url": "https://hooks.example.com/x?token=s3cret", "metadata": {"order": "A-77"}},
            "description": "call Ada about her loan",
            "phone_numbers": ["+14155550100", "+14155550101"],
            "status": "active",
            "created_at": "2026-03-02T12:00:00Z",
            "total": 12345678, "card": 4111111111111111i64
        });
        let r = json(&body);
        assert_eq!(
            r,
            json!({
                "app_config": {
                    "app_id": "app-1", "app_version": 2, "app_type": "agent",
                    "connection_config": {"connection_id": "conn", "agent_phone_number": "<phone>"},
                    "agent_variables": {"first_name": "<string>", "balance": "<number>", "vip": "<bool>", "nested": {"pin": "<string>"}},
                    "app_overrides": {"initial_bot_message": "<string>"}
                },
                "user_config": {"user_phone_number": "<phone>"},
                "webhook_config": {"url": "<url>", "metadata": {"order": "<string>"}},
                "description": "<string>",
                "phone_numbers": ["<phone>", "<phone>"],
                "status": "active",
                "created_at": "2026-03-02T12:00:00Z",
                "total": 12345678, "card": "<number>"
            })
        );
    }

    #[test]
    fn long_lists_are_cut_and_counted() {
        let r = json(
            &json!({"items": (0..8).map(|i| json!({"deployment_id": format!("d-{i}")})).collect::<Vec<_>>()}),
        );
        let items = r["items"].as_array().unwrap();
        assert_eq!(items.len(), LIST_ITEMS_KEPT + 1);
        assert_eq!(items[LIST_ITEMS_KEPT], "<3 more items>");
        assert_eq!(items[0]["deployment_id"], "d-0");
    }

    #[test]
    fn a_kept_query_is_the_raw_one_only_when_nothing_needs_hiding() {
        let raw = "limit=5&offset=10&sort_by=name";
        assert_eq!(&*query_kept(raw, |_| {}), raw);
        let raw = "limit=5&search=%2B14155550100";
        let kept = query_kept(raw, |_| {});
        assert_eq!(&*kept, "limit=5&search=%3Cstring%3E");
        let raw = "status=14155550100";
        assert_eq!(
            &*query_kept(raw, |_| {}),
            "status=%3Cnumber%3E",
            "a kept parameter loses its phone-like digits"
        );
        // The digit count decides whether runs are looked for at all: six digits, split
        // across parameters, make no number; seven in one run do, even percent-encoded.
        let raw = "limit=123&offset=456";
        assert!(matches!(query_kept(raw, |_| {}), Cow::Borrowed(_)));
        let raw = "limit=1234567";
        assert_eq!(&*query_kept(raw, |_| {}), "limit=%3Cnumber%3E");
        let raw = "status=%31%34%31%35%35%35%35";
        assert_eq!(&*query_kept(raw, |_| {}), "status=%3Cnumber%3E");
    }

    #[test]
    fn queries_keep_paging_and_hide_searches() {
        let q = query(query_pairs(
            "limit=5&search=%2B14155550100&offset=10&sort_by=name",
        ));
        assert_eq!(
            Value::Object(q),
            json!({"limit": "5", "search": "<string>", "offset": "10", "sort_by": "name"})
        );
        assert_eq!(
            string(
                "http://h/api/x?search=ada&offset=20&limit=20",
                Some("next_page_uri")
            ),
            "http://h/api/x?search=%3Cstring%3E&offset=20&limit=20"
        );
    }
}
