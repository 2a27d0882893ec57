//! Mutants of the `pagination` group: one property of a page, a link, an order or a search
//! wrong.

use reqwest::Method;
use serde_json::{Value, json};

use super::{answer_edit, intercept, mutants};

/// `uri` without its `search` parameter.
fn without_search(uri: &str) -> String {
    let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
    let kept: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .filter(|(k, _)| k != "search")
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let q = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(kept)
        .finish();
    format!("{path}?{q}")
}

/// A page's `next_page_uri` without `search`.
fn next_drops_search(v: &mut Value) {
    if let Some(next) = v["next_page_uri"].as_str() {
        v["next_page_uri"] = json!(without_search(next));
    }
}

/// `uri` with its `offset` parameter set to `offset` (last).
fn with_offset(uri: &str, offset: i64) -> String {
    let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
    let mut pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .filter(|(k, _)| k != "offset")
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    pairs.push(("offset".into(), offset.to_string()));
    let q = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    format!("{path}?{q}")
}

/// A page of `list` that is exactly full at the end (offset + limit = total) links to the
/// empty page after it (`<=` for `<`).
fn next_on_an_exactly_full_last_page(list: &'static str) -> super::super::support::Mutation {
    super::respond(move |req, resp| {
        if resp.status == 200
            && req.is(Method::GET, &[list])
            && let Some(mut v) = resp.json()
        {
            let n = |k: &str| v[k].as_i64().unwrap_or(-1);
            let (offset, limit, total) = (n("offset"), n("limit"), n("total"));
            let full = v["items"]
                .as_array()
                .is_some_and(|i| i.len() as i64 == limit);
            if v["next_page_uri"].is_null() && full && limit > 0 && offset + limit == total {
                let here = format!("{}?{}", req.path, req.query);
                v["next_page_uri"] = json!(with_offset(&here, offset + limit));
                resp.set_json(&v);
            }
        }
    })
}

/// Each item's `phone_numbers` of a deployment list changed by `f`.
fn listed_numbers(f: fn(&Value) -> Value) -> super::super::support::Mutation {
    answer_edit(
        |r| r.is(Method::GET, &["deployments"]),
        move |v| {
            for item in v["items"].as_array_mut().into_iter().flatten() {
                if item.get("phone_numbers").is_some() {
                    item["phone_numbers"] = f(item);
                }
            }
        },
    )
}

mutants! {
    /// A search of several words looks for its first word only.
    fn search_by_its_first_word() fails ["pagination.search_words"] {
        super::intercept(|req| {
            if req.is(Method::GET, &["deployments"])
                && let Some(text) = req.param("search")
                && let Some((first, _)) = text.split_once(' ')
            {
                req.set_param("search", first);
            }
            None
        })
    }

    /// Search matches the text in its own letter case only.
    fn search_case_sensitive() fails ["pagination.search_case"] {
        super::respond(|req, resp| {
            if resp.status == 200
                && (req.is(Method::GET, &["deployments"]) || req.is(Method::GET, &["campaigns"]))
                && let Some(text) = req.param("search")
                && text.chars().any(|c| c.is_ascii_uppercase())
                && let Some(mut v) = resp.json()
            {
                let kept: Vec<Value> = v["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|i| i["name"].as_str().is_some_and(|n| n.contains(&text)))
                    .cloned()
                    .collect();
                v["total"] = json!(kept.len());
                v["items"] = json!(kept);
                resp.set_json(&v);
            }
        })
    }

    /// A searched deployment list echoes one more than the limit asked.
    fn the_limit_echoed_wrong() fails ["pagination.totals"] {
        answer_edit(
            |r| r.is(Method::GET, &["deployments"]) && r.param("search").is_some(),
            |v| v["limit"] = json!(v["limit"].as_u64().unwrap_or(0) + 1),
        )
    }

    /// The first page of a searched deployment list links to a previous page (itself).
    fn prev_page_uri_set_on_the_first_page() fails ["pagination.prev_null_on_first_page", "pagination.walk"] {
        super::respond(|req, resp| {
            if resp.status == 200
                && req.is(Method::GET, &["deployments"])
                && req.param("search").is_some()
                && req.param("offset").as_deref() == Some("0")
                && let Some(mut v) = resp.json()
            {
                v["prev_page_uri"] = json!(format!("{}?{}", req.path, req.query));
                resp.set_json(&v);
            }
        })
    }

    fn next_page_uri_set_on_the_last_page() fails ["pagination.next_null_on_last_page", "pagination.walk"] {
        super::respond(|req, resp| {
            if resp.status == 200
                && req.is(Method::GET, &["deployments"])
                && let Some(mut v) = resp.json()
                && v["next_page_uri"].is_null()
            {
                let offset = v["offset"].as_u64().unwrap_or(0) + v["limit"].as_u64().unwrap_or(0);
                v["next_page_uri"] = json!(format!("{}?offset={offset}", req.path));
                resp.set_json(&v);
            }
        })
    }

    /// next_page_uri of the deployment list forgets the search: the decoys show.
    fn next_page_uri_drops_the_search() fails ["pagination.walk"] {
        answer_edit(|r| r.is(Method::GET, &["deployments"]), next_drops_search)
    }

    /// sort_order=desc by created_at answered in ascending order.
    fn desc_by_created_at_answered_ascending() fails ["pagination.sort_order"] {
        intercept(|req| {
            if req.is(Method::GET, &["deployments"])
                && req.param("sort_by").as_deref() == Some("created_at")
                && req.param("sort_order").as_deref() == Some("desc")
            {
                req.set_param("sort_order", "asc");
            }
            None
        })
    }

    fn sort_by_name_answered_reversed() fails ["pagination.sort_by_name"] {
        answer_edit(
            |r| r.is(Method::GET, &["deployments"]) && r.param("sort_by").as_deref() == Some("name"),
            |v| {
                if let Some(items) = v["items"].as_array_mut() {
                    items.reverse();
                }
            },
        )
    }

    /// A search for one deployment's exact name lists every deployment.
    fn a_narrow_search_ignored() fails ["pagination.search"] {
        intercept(|req| {
            if req.is(Method::GET, &["deployments"]) && req.param("search").is_some_and(|s| s.ends_with("-3")) {
                req.query = without_search(&format!("?{}", req.query)).trim_start_matches('?').to_string();
            }
            None
        })
    }

    fn the_campaign_lists_next_page_uri_drops_the_search() fails ["pagination.campaign_list"] {
        answer_edit(|r| r.is(Method::GET, &["campaigns"]), next_drops_search)
    }

    /// prev_page_uri is offset - limit, unclamped: from inside the first page's reach it
    /// points below 0, which the platform itself refuses.
    fn a_prev_page_uri_below_offset_0() fails ["pagination.walk"] {
        answer_edit(
            |r| r.is(Method::GET, &["deployments"]),
            |v| {
                let (offset, limit) = (v["offset"].as_i64().unwrap_or(0), v["limit"].as_i64().unwrap_or(0));
                if let Some(prev) = v["prev_page_uri"].as_str()
                    && 0 < offset
                    && offset < limit
                {
                    v["prev_page_uri"] = json!(with_offset(prev, offset - limit));
                }
            },
        )
    }

    fn a_deployment_next_page_uri_on_an_exactly_full_last_page() fails ["pagination.next_null_on_last_page"] {
        next_on_an_exactly_full_last_page("deployments")
    }

    fn a_campaign_next_page_uri_on_an_exactly_full_last_page() fails ["pagination.campaign_list"] {
        next_on_an_exactly_full_last_page("campaigns")
    }

    /// A list item's phone_numbers holds the numbers of its first connection only.
    fn listed_phone_numbers_of_the_first_connection_only() fails ["pagination.walk"] {
        listed_numbers(|item| item["connection_configs"][0]["phone_numbers"].clone())
    }

    fn listed_phone_numbers_without_their_plus() fails ["pagination.walk"] {
        listed_numbers(|item| {
            let bare: Vec<Value> = item["phone_numbers"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|n| json!(n.as_str().unwrap_or_default().trim_start_matches('+')))
                .collect();
            json!(bare)
        })
    }

    /// Campaign list items show an app_version their campaign does not have.
    fn campaign_list_items_with_another_app_version() fails ["pagination.campaign_list"] {
        answer_edit(
            |r| r.is(Method::GET, &["campaigns"]),
            |v| {
                for item in v["items"].as_array_mut().into_iter().flatten() {
                    if let Some(n) = item["app_version"].as_i64() {
                        item["app_version"] = json!(n + 1);
                    }
                }
            },
        )
    }
}
