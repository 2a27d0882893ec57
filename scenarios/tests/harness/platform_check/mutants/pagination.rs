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

mutants! {
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
}
