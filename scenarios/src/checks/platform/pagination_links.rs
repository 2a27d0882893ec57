//! Part of the `pagination` group ([`super::pagination`]): the page links of a list at every
//! boundary, walks along them, and its items against each resource's own GET.
//!
//! Each page of a table of offsets and limits is asked directly: offsets that are not a
//! multiple of the limit (inside the first page's reach, where the previous page starts at
//! 0), pages exactly full at the end, a page holding the whole list. Of each page are judged:
//! its total, the offset and limit it echoes and its items (the whole list's items from its
//! offset); its `next_page_uri`, null exactly when no item follows; its `prev_page_uri`, null
//! exactly at offset 0; and each link it gives, followed: it must lead to the page at
//! offset + limit (next) or max(0, offset - limit) (previous), answer it with 2xx, echo the
//! offset and limit it names, and hold that page's items.
//!
//! Every item read on these pages is then held against its resource's own GET: each field
//! both show the same value (instants as instants); a deployment's `phone_numbers`, when the
//! item shows them, every number of every connection config, as created.

use std::collections::BTreeMap;

use chrono::{DateTime, FixedOffset};
use reqwest::Method;
use serde_json::{Value, json};
use url::Url;

use crate::checks::Evidence;
use crate::checks::platform::context::Ctx;
use crate::checks::platform::exchange::{Body, Exchange};
use crate::checks::platform::target::Key;

/// The page size of the walks.
pub(super) const PAGE: usize = 2;

/// `e` with `faults`, the first as its cause, when there are any.
pub(super) fn caused(e: Evidence, faults: &[String]) -> Evidence {
    match faults.first() {
        Some(f) => e.with("faults", faults.to_vec()).cause(f.clone()),
        None => e,
    }
}

/// A list under judgement.
pub(super) struct Listing {
    /// Its path.
    pub(super) path: Vec<String>,
    /// The `search` every page is asked with.
    pub(super) search: String,
    /// The id field of its items.
    pub(super) id_field: &'static str,
    /// How many items match the search (what was created).
    pub(super) total: usize,
    /// The ids of the whole list (the search at limit 100), in its order: what each page is
    /// held against.
    pub(super) ids: Vec<String>,
}

impl Listing {
    /// What is wrong with `whole`, the whole list the pages are held against, when it does
    /// not hold exactly the `created` items.
    pub(super) fn whole_fault(&self, whole: &Exchange, created: &[String]) -> Option<String> {
        let mut got = self.ids.clone();
        got.sort();
        let mut want = created.to_vec();
        want.sort();
        (whole.status != 200 || got != want).then(|| {
            format!(
                "the whole list (search, limit 100) answered {} holding {:?}, not the {} matching: {want:?}",
                whole.outcome(),
                self.ids,
                want.len()
            )
        })
    }

    /// The ids of the whole list from `offset`, at most `limit`.
    fn slice(&self, offset: i64, limit: i64) -> Vec<String> {
        let (Ok(offset), Ok(limit)) = (usize::try_from(offset), usize::try_from(limit)) else {
            return Vec::new();
        };
        self.ids.iter().skip(offset).take(limit).cloned().collect()
    }
}

/// What the pages of a table showed, each finding under the aspect it concerns.
#[derive(Default)]
pub(super) struct Probed {
    /// The pages asked directly, in the order of the table.
    pub(super) asked: Vec<Exchange>,
    /// The pages asked directly: status, total, offset and limit echoed, items; and the
    /// offset and limit echoed by the pages their links led to.
    pub(super) own: Vec<String>,
    /// `next_page_uri` null while items follow, or set on the last page.
    pub(super) next: Vec<String>,
    /// `prev_page_uri` set at offset 0, or null after it.
    pub(super) prev: Vec<String>,
    /// The links followed: where they lead, the answer, the items there.
    pub(super) links: Vec<String>,
    /// Each page as evidence, with the pages its links led to.
    pub(super) pages: Vec<Value>,
    /// Every item read, on the pages and on the pages their links led to.
    pub(super) items: Vec<Value>,
    /// Whether each page's `next_page_uri` was null.
    pub(super) next_null: Vec<bool>,
}

/// The ids of a page's items.
pub(super) fn ids(body: &Value, id_field: &str) -> Vec<String> {
    body["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|i| i[id_field].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// A page as evidence.
fn shown(x: &Exchange, id_field: &str) -> serde_json::Map<String, Value> {
    let b = x.body();
    let mut m = serde_json::Map::new();
    m.insert("request".into(), x.sent.to_value());
    if x.status != 200 {
        m.insert("response".into(), x.response());
        return m;
    }
    for k in ["total", "offset", "limit"] {
        m.insert(k.into(), b[k].clone());
    }
    m.insert("ids".into(), json!(ids(b, id_field)));
    for k in ["next_page_uri", "prev_page_uri"] {
        m.insert(k.into(), b[k].clone());
    }
    m
}

/// Asks each page of `table` (`(offset, limit)`), judges it and follows its links.
pub(super) async fn probe(cx: &Ctx, l: &Listing, table: &[(usize, usize)]) -> Probed {
    let mut p = Probed::default();
    for &(offset, limit) in table {
        let query = [
            ("search", l.search.clone()),
            ("offset", offset.to_string()),
            ("limit", limit.to_string()),
        ];
        let page = cx.get(&l.path, &query).await;
        let at = format!("the page at offset {offset}, limit {limit}");
        p.asked.push(page.clone());
        let mut e = shown(&page, l.id_field);
        if page.status != 200 {
            let why = format!("{at} answered {}", page.outcome());
            p.own.push(why.clone());
            p.next.push(why.clone());
            p.prev.push(why);
            p.pages.push(Value::Object(e));
            continue;
        }
        let b = page.body();
        if b["total"].as_u64() != Some(l.total as u64) {
            p.own
                .push(format!("{at}: total {}, not {}", b["total"], l.total));
        }
        echoes(&mut p.own, &at, b, offset as i64, limit as i64);
        let (got, want) = (ids(b, l.id_field), l.slice(offset as i64, limit as i64));
        if got != want {
            p.own.push(format!(
                "{at} holds {got:?}, not the whole list's items from offset {offset}: {want:?}"
            ));
        }
        p.items
            .extend(b["items"].as_array().into_iter().flatten().cloned());
        let more = offset + limit < l.total;
        let mut followed = Vec::new();
        let (next, prev) = (&b["next_page_uri"], &b["prev_page_uri"]);
        p.next_null.push(next.is_null());
        match (next, more) {
            (Value::String(uri), true) => {
                let to = (offset + limit) as i64;
                let f = follow(cx, l, &mut p, &at, "next_page_uri", uri, to, &[limit]).await;
                followed.push(f);
            }
            (Value::Null, false) => {}
            (other, true) => p.next.push(format!(
                "{at}: next_page_uri is {other} while items follow (offset + limit < total {}): a link to offset {} expected",
                l.total,
                offset + limit
            )),
            (other, false) => p.next.push(format!(
                "{at}: next_page_uri is {other} on the last page (offset + limit >= total {}): null expected",
                l.total
            )),
        }
        match (prev, offset > 0) {
            (Value::String(uri), true) => {
                // The page before at the same size, or (from inside the first page's reach)
                // the items before, from 0.
                let mut limits = vec![limit];
                if offset < limit {
                    limits.push(offset);
                }
                let to = offset.saturating_sub(limit) as i64;
                let f = follow(cx, l, &mut p, &at, "prev_page_uri", uri, to, &limits).await;
                followed.push(f);
            }
            (Value::Null, false) => {}
            (other, true) => p.prev.push(format!(
                "{at}: prev_page_uri is {other} after the first page: a link to offset {} expected",
                offset.saturating_sub(limit)
            )),
            (other, false) => p.prev.push(format!(
                "{at}: prev_page_uri is {other} on the first page: null expected"
            )),
        }
        e.insert("followed".into(), Value::Array(followed));
        p.pages.push(Value::Object(e));
    }
    p
}

/// Adds to `faults` what `b` echoes otherwise than `offset` and `limit`.
fn echoes(faults: &mut Vec<String>, at: &str, b: &Value, offset: i64, limit: i64) {
    if b["offset"].as_i64() != Some(offset) || b["limit"].as_i64() != Some(limit) {
        faults.push(format!(
            "{at} echoes offset {}, limit {}: not the offset {offset} and limit {limit} asked",
            b["offset"], b["limit"]
        ));
    }
}

/// Follows `uri`, the `which` link of the page `at`, expecting the page at `offset` with one
/// of `limits`; adds what is wrong to `p` and answers the page as evidence.
#[allow(clippy::too_many_arguments)]
async fn follow(
    cx: &Ctx,
    l: &Listing,
    p: &mut Probed,
    at: &str,
    which: &str,
    uri: &str,
    offset: i64,
    limits: &[usize],
) -> Value {
    let url = match Url::parse(uri).or_else(|_| cx.http.base().join(uri)) {
        Ok(u) => u,
        Err(e) => {
            p.links
                .push(format!("{which} of {at}, '{uri}', is not a URI: {e}"));
            return json!({which: uri});
        }
    };
    let x = cx
        .http
        .call_url(
            Method::GET,
            url.clone(),
            Key::Value(&cx.main.key),
            Body::Empty,
        )
        .await;
    let mut e = shown(&x, l.id_field);
    e.insert(which.into(), json!(uri));
    let b = x.body();
    // The page the link names: its query's offset and limit, else those its answer echoes.
    let named = |k: &str| match url.query_pairs().find(|(n, _)| n == k) {
        Some((_, v)) => v.parse::<i64>().ok(),
        None => b[k].as_i64(),
    };
    let (o, n) = (named("offset"), named("limit"));
    let shows = |v: Option<i64>| v.map_or("none".to_string(), |v| v.to_string());
    let limits_ok = n.is_some_and(|n| limits.iter().any(|&m| m as i64 == n));
    if o != Some(offset) || !limits_ok {
        let want: Vec<String> = limits.iter().map(usize::to_string).collect();
        p.links.push(format!(
            "{which} of {at} leads to offset {}, limit {}: offset {offset}, limit {} expected",
            shows(o),
            shows(n),
            want.join(" or ")
        ));
    }
    if !x.is_success() {
        p.links
            .push(format!("{which} of {at} answered {}", x.outcome()));
        return Value::Object(e);
    }
    let (Some(o), Some(n)) = (o, n) else {
        return Value::Object(e);
    };
    echoes(
        &mut p.own,
        &format!("the page {which} of {at} leads to"),
        b,
        o,
        n,
    );
    let (got, want) = (ids(b, l.id_field), l.slice(o, n));
    if got != want {
        p.links.push(format!(
            "the page {which} of {at} leads to (offset {o}, limit {n}) holds {got:?}, not the whole list's items there: {want:?}"
        ));
    }
    p.items
        .extend(b["items"].as_array().into_iter().flatten().cloned());
    Value::Object(e)
}

/// What the items read showed against their resources' own GETs.
#[derive(Default)]
pub(super) struct Values {
    /// What differs.
    pub(super) faults: Vec<String>,
    /// The differences, and the reads that showed them, as evidence.
    pub(super) evidence: Vec<Value>,
    /// How many phone numbers each item judged showed.
    pub(super) numbers_shown: Vec<usize>,
}

/// Holds every item of `items` whose id is one of `created` against that resource's own GET
/// (`read` its path): each field both show must hold the same value; where `numbers` names
/// the numbers a resource was created with, the item's `phone_numbers` (when it shows them)
/// must be exactly those, in any order.
pub(super) async fn against_reads(
    cx: &Ctx,
    id_field: &str,
    items: &[Value],
    created: &[String],
    read: impl Fn(&str) -> Vec<String>,
    numbers: &BTreeMap<String, Vec<String>>,
) -> Values {
    let mut out = Values::default();
    for id in created {
        let listed: Vec<&Value> = items
            .iter()
            .filter(|i| i[id_field].as_str() == Some(id))
            .collect();
        if listed.is_empty() {
            continue;
        }
        let x = cx.get(&read(id), &[]).await;
        if x.status != 200 {
            out.faults
                .push(format!("the GET of {id} answered {}", x.outcome()));
            out.evidence.push(Value::Object(x.evidence().0));
            continue;
        }
        // Each difference once, however many pages showed it.
        let mut seen: BTreeMap<String, Value> = BTreeMap::new();
        for item in listed {
            for (field, value) in item.as_object().into_iter().flatten() {
                if field == "phone_numbers" {
                    continue;
                }
                if let Some(own) = x.body().get(field)
                    && !same(value, own)
                {
                    seen.entry(field.clone()).or_insert_with(|| {
                        json!({"id": id, "field": field, "listed": value, "read": own, "request": x.sent.to_value()})
                    });
                }
            }
            if let (Some(shown), Some(sent)) = (item.get("phone_numbers"), numbers.get(id)) {
                let mut got: Vec<&str> = shown
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|n| n.as_str().unwrap_or("(not a string)"))
                            .collect()
                    })
                    .unwrap_or_default();
                out.numbers_shown.push(got.len());
                got.sort_unstable();
                let mut want: Vec<&str> = sent.iter().map(String::as_str).collect();
                want.sort_unstable();
                if !shown.is_array() || got != want {
                    seen.entry("phone_numbers".into()).or_insert_with(|| {
                        json!({"id": id, "field": "phone_numbers", "listed": shown, "created_with": sent, "request": x.sent.to_value()})
                    });
                }
            }
        }
        for (field, e) in seen {
            out.faults.push(if field == "phone_numbers" {
                format!(
                    "{id}: phone_numbers {} is not every number of its connection configs as created ({})",
                    e["listed"], e["created_with"]
                )
            } else {
                format!(
                    "{id}: {field} listed {}, its own GET shows {}",
                    e["listed"], e["read"]
                )
            });
            out.evidence.push(e);
        }
    }
    out
}

/// Whether two values are the same: strings that are both instants as instants, arrays and
/// objects member by member, the rest as they are.
fn same(a: &Value, b: &Value) -> bool {
    let instant = |s: &str| DateTime::<FixedOffset>::parse_from_rfc3339(s).ok();
    match (a, b) {
        (Value::String(x), Value::String(y)) => {
            x == y || matches!((instant(x), instant(y)), (Some(p), Some(q)) if p == q)
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// What a walk along page links saw.
pub(super) struct Walk {
    /// Each id seen, with how many times.
    pub(super) seen: BTreeMap<String, usize>,
    /// The pages read, as evidence.
    pub(super) pages: Vec<Value>,
    /// Every item read.
    pub(super) items: Vec<Value>,
    /// Why the walk stopped early, if it did.
    pub(super) broken: Option<String>,
}

/// Follows `link` (`next_page_uri` or `prev_page_uri`) from `from` until it is null, at most
/// `max_pages` pages, counting the items by `id_field`.
pub(super) async fn follow_all(
    cx: &Ctx,
    from: &Exchange,
    link: &str,
    id_field: &str,
    max_pages: usize,
) -> Walk {
    let mut w = Walk {
        seen: BTreeMap::new(),
        pages: Vec::new(),
        items: Vec::new(),
        broken: None,
    };
    let mut page = from.clone();
    loop {
        let b = page.body();
        w.items
            .extend(b["items"].as_array().into_iter().flatten().cloned());
        w.pages.push(Value::Object(
            Evidence::new()
                .with("request", page.sent.to_value())
                .with("status", page.status)
                .with("items", count_ids(b, id_field, &mut w.seen))
                .with(link, b[link].clone())
                .0,
        ));
        let next = match &b[link] {
            Value::Null => return w,
            Value::String(s) => s.clone(),
            other => {
                w.broken = Some(format!("{link} is {other}, not a string or null"));
                return w;
            }
        };
        if w.pages.len() >= max_pages {
            w.broken = Some(format!("still a {link} after {max_pages} pages"));
            return w;
        }
        let url = match Url::parse(&next).or_else(|_| cx.http.base().join(&next)) {
            Ok(u) => u,
            Err(e) => {
                w.broken = Some(format!("{link} '{next}' is not a URI: {e}"));
                return w;
            }
        };
        page = cx
            .http
            .call_url(Method::GET, url, Key::Value(&cx.main.key), Body::Empty)
            .await;
        if page.status != 200 {
            w.broken = Some(format!("{link} answered {}", page.outcome()));
            w.pages.push(Value::Object(page.evidence().0));
            return w;
        }
    }
}

fn count_ids(body: &Value, id_field: &str, seen: &mut BTreeMap<String, usize>) -> Vec<String> {
    let ids: Vec<String> = body["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i[id_field].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    for id in &ids {
        *seen.entry(id.clone()).or_default() += 1;
    }
    ids
}

/// Whether a walk saw exactly `ids`, each once.
pub(super) fn exactly_once(w: &Walk, ids: &[String]) -> bool {
    w.broken.is_none()
        && w.seen.len() == ids.len()
        && ids.iter().all(|id| w.seen.get(id) == Some(&1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_are_compared_as_instants_and_the_rest_as_it_is() {
        assert!(same(
            &json!({"t": "2026-01-01T00:00:00Z", "n": [1]}),
            &json!({"n": [1], "t": "2026-01-01T02:30:00.000+02:30"})
        ));
        assert!(!same(
            &json!("2026-01-01T00:00:00Z"),
            &json!("2026-01-01T00:00:01Z")
        ));
        assert!(!same(&json!("+12025550100"), &json!("12025550100")));
        assert!(!same(&json!({"a": 1}), &json!({"a": 1, "b": null})));
        assert!(!same(&json!(1), &json!(1.0)));
    }

    #[test]
    fn a_slice_out_of_range_is_empty() {
        let l = Listing {
            path: Vec::new(),
            search: String::new(),
            id_field: "id",
            total: 3,
            ids: vec!["a".into(), "b".into(), "c".into()],
        };
        assert_eq!(l.slice(1, 5), vec!["b".to_string(), "c".to_string()]);
        assert!(l.slice(-2, 5).is_empty());
        assert!(l.slice(3, 2).is_empty());
    }
}
