//! `pagination`: totals, `next_page_uri` / `prev_page_uri` null at the ends, following them
//! walks every item exactly once, sort orders and search; on the deployment list (the spec's
//! paginated list) and the campaign list.
//!
//! The run creates five deployments and three campaigns whose names share a token, and lists
//! with `search` set to it, so other resources of the workspace do not disturb the counts.

use std::collections::BTreeMap;

use reqwest::Method;
use serde_json::Value;
use url::Url;

use super::context::Ctx;
use super::exchange::Exchange;
use super::fixtures::{self, secs};
use super::target::{Body, Key};
use super::verdicts::Verdicts;
use crate::checks::{CheckDef, Evidence};

const TOTALS: CheckDef = CheckDef::error(
    "pagination.totals",
    "total counts every match; limit and offset are echoed; a page holds at most limit items",
);
const PREV_NULL: CheckDef = CheckDef::error(
    "pagination.prev_null_on_first_page",
    "prev_page_uri is null on the first page (and next_page_uri set when more follow)",
);
const NEXT_NULL: CheckDef = CheckDef::error(
    "pagination.next_null_on_last_page",
    "next_page_uri is null on the last page (and prev_page_uri set)",
);
const WALK: CheckDef = CheckDef::error(
    "pagination.walk",
    "following next_page_uri, then prev_page_uri back, visits every deployment exactly once each way",
);
const SORT_ORDER: CheckDef = CheckDef::error(
    "pagination.sort_order",
    "sort_by=created_at with sort_order=asc and desc orders by created_at both ways",
);
const SORT_NAME: CheckDef = CheckDef::warning(
    "pagination.sort_by_name",
    "sort_by=name orders by name, asc and desc (name as a sort field is assumed)",
);
const SEARCH: CheckDef = CheckDef::error(
    "pagination.search",
    "search finds exactly the deployments whose name contains the text",
);
const CAMPAIGNS: CheckDef = CheckDef::error(
    "pagination.campaign_list",
    "the campaign list pages the same way: total, search, next_page_uri walk, null at the end",
);

/// The checks of this group.
pub const CHECKS: &[CheckDef] = &[
    TOTALS, PREV_NULL, NEXT_NULL, WALK, SORT_ORDER, SORT_NAME, SEARCH, CAMPAIGNS,
];

/// How many deployments are listed.
const DEPLOYMENTS: usize = 5;
/// How many campaigns are listed.
const CAMPAIGN_COUNT: usize = 3;
/// The page size of the walks.
const PAGE: usize = 2;

/// Runs the group.
pub async fn run(cx: &Ctx, v: &mut Verdicts) {
    let token = cx.names.name("page");
    let mut ids = Vec::new();
    for i in 1..=DEPLOYMENTS {
        let x = cx
            .create_deployment(fixtures::deployment(
                &cx.settings.agent,
                &format!("{token}-{i}"),
                &[cx.names.number()],
            ))
            .await;
        match x.str_field("deployment_id") {
            Some(id) => ids.push(id.to_string()),
            None => {
                v.blocked_only(
                    &[
                        &TOTALS,
                        &PREV_NULL,
                        &NEXT_NULL,
                        &WALK,
                        &SORT_ORDER,
                        &SORT_NAME,
                        &SEARCH,
                    ],
                    "creating the deployments to list",
                    x.evidence(),
                );
                return campaigns(cx, v).await;
            }
        }
    }
    let list = |query: Vec<(&'static str, String)>| async move {
        cx.get(&cx.paths.deployments(), &query).await
    };
    let q = |offset: usize| {
        vec![
            ("search", token.clone()),
            ("limit", PAGE.to_string()),
            ("offset", offset.to_string()),
        ]
    };
    let first = list(q(0)).await;
    let last = list(q(DEPLOYMENTS - 1)).await;
    let page = |x: &Exchange, offset: usize, len: usize| {
        let b = x.body();
        x.status == 200
            && b["total"].as_u64() == Some(DEPLOYMENTS as u64)
            && b["limit"].as_u64() == Some(PAGE as u64)
            && b["offset"].as_u64() == Some(offset as u64)
            && b["items"].as_array().map(Vec::len) == Some(len)
    };
    v.judge(
        &TOTALS,
        page(&first, 0, PAGE) && page(&last, DEPLOYMENTS - 1, 1),
        Exchange::all(&[&first, &last]),
        format!(
            "total {DEPLOYMENTS}, limit {PAGE}, the offset asked, {PAGE} items at offset 0 and 1 at offset {}",
            DEPLOYMENTS - 1
        ),
    );
    v.judge(
        &PREV_NULL,
        first.status == 200
            && first.body()["prev_page_uri"].is_null()
            && first.body()["next_page_uri"].is_string(),
        first.evidence(),
        "\"prev_page_uri\": null and a next_page_uri string on the first page",
    );
    v.judge(
        &NEXT_NULL,
        last.status == 200
            && last.body()["next_page_uri"].is_null()
            && last.body()["prev_page_uri"].is_string(),
        last.evidence(),
        "\"next_page_uri\": null and a prev_page_uri string on the last page",
    );
    walk(cx, v, &first, &last, &ids).await;
    sorts(cx, v, &token, &ids).await;
    search(cx, v, &token, &ids).await;
    campaigns(cx, v).await;
}

/// What a walk along page links saw.
struct Walk {
    /// Each id seen, with how many times.
    seen: BTreeMap<String, usize>,
    /// The pages read, as evidence.
    pages: Vec<Value>,
    /// Why the walk stopped early, if it did.
    broken: Option<String>,
}

/// Follows `link` (`next_page_uri` or `prev_page_uri`) from `from` until it is null, at most
/// `max_pages` pages, counting the items by `id_field`.
async fn follow(cx: &Ctx, from: &Exchange, link: &str, id_field: &str, max_pages: usize) -> Walk {
    let mut w = Walk {
        seen: BTreeMap::new(),
        pages: Vec::new(),
        broken: None,
    };
    let mut page = from.clone();
    loop {
        let b = page.body();
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
fn exactly_once(w: &Walk, ids: &[String]) -> bool {
    w.broken.is_none()
        && w.seen.len() == ids.len()
        && ids.iter().all(|id| w.seen.get(id) == Some(&1))
}

async fn walk(cx: &Ctx, v: &mut Verdicts, first: &Exchange, last: &Exchange, ids: &[String]) {
    let max = DEPLOYMENTS.div_ceil(PAGE) + 2;
    let forward = follow(cx, first, "next_page_uri", "deployment_id", max).await;
    let backward = follow(cx, last, "prev_page_uri", "deployment_id", max).await;
    let ok = exactly_once(&forward, ids) && exactly_once(&backward, ids);
    let mut e = Evidence::new()
        .with("expected_ids", ids.to_vec())
        .with("forward", forward.pages.clone());
    if let Some(why) = &forward.broken {
        e = e.with("forward_broken", why.clone());
    }
    e = e.with("backward", backward.pages.clone());
    if let Some(why) = &backward.broken {
        e = e.with("backward_broken", why.clone());
    }
    v.judge(
        &WALK,
        ok,
        e,
        format!("each of the {DEPLOYMENTS} deployments exactly once following next_page_uri from the first page, and again following prev_page_uri from the last"),
    );
}

fn field_of(x: &Exchange, field: &str) -> Vec<String> {
    x.body()["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|i| i[field].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

async fn sorts(cx: &Ctx, v: &mut Verdicts, token: &str, ids: &[String]) {
    let sorted = |by: &'static str, order: &'static str| {
        let q = vec![
            ("search", token.to_string()),
            ("sort_by", by.to_string()),
            ("sort_order", order.to_string()),
            ("limit", "100".to_string()),
        ];
        async move { cx.get(&cx.paths.deployments(), &q).await }
    };
    let asc = sorted("created_at", "asc").await;
    let desc = sorted("created_at", "desc").await;
    let instants = |x: &Exchange| -> Vec<chrono::DateTime<chrono::FixedOffset>> {
        field_of(x, "created_at")
            .iter()
            .filter_map(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
            .collect()
    };
    let (a, d) = (instants(&asc), instants(&desc));
    let ok = asc.status == 200
        && desc.status == 200
        && a.len() == ids.len()
        && d.len() == ids.len()
        && a.windows(2).all(|w| w[0] <= w[1])
        && d.windows(2).all(|w| w[0] >= w[1]);
    v.judge(
        &SORT_ORDER,
        ok,
        Exchange::all(&[&asc, &desc]),
        format!("all {DEPLOYMENTS} deployments, created_at ascending then descending"),
    );

    let asc = sorted("name", "asc").await;
    let desc = sorted("name", "desc").await;
    let mut want: Vec<String> = (1..=DEPLOYMENTS).map(|i| format!("{token}-{i}")).collect();
    let asc_ok = field_of(&asc, "name") == want;
    want.reverse();
    let desc_ok = field_of(&desc, "name") == want;
    v.judge(
        &SORT_NAME,
        asc.status == 200 && desc.status == 200 && asc_ok && desc_ok,
        Exchange::all(&[&asc, &desc]),
        format!("names {token}-1 to -{DEPLOYMENTS} ascending, then descending"),
    );
}

async fn search(cx: &Ctx, v: &mut Verdicts, token: &str, ids: &[String]) {
    let find = |text: String| {
        let q = vec![("search", text), ("limit", "100".to_string())];
        async move { cx.get(&cx.paths.deployments(), &q).await }
    };
    let all = find(token.to_string()).await;
    let one = find(format!("{token}-3")).await;
    let got = |x: &Exchange| {
        let mut v = field_of(x, "deployment_id");
        v.sort();
        v
    };
    let mut want_all = ids.to_vec();
    want_all.sort();
    let ok = all.status == 200
        && one.status == 200
        && got(&all) == want_all
        && got(&one) == vec![ids[2].clone()]
        && one.body()["total"].as_u64() == Some(1);
    v.judge(
        &SEARCH,
        ok,
        Exchange::all(&[&all, &one]),
        format!("search '{token}' finds the {DEPLOYMENTS} deployments; '{token}-3' finds one, with total 1"),
    );
}

async fn campaigns(cx: &Ctx, v: &mut Verdicts) {
    let token = cx.names.name("page-campaign");
    let start = match cx.now().await {
        Ok(n) => n.at + secs(3600),
        Err(x) => return v.blocked_only(&[&CAMPAIGNS], "reading the target's time", x.evidence()),
    };
    let mut ids = Vec::new();
    for i in 1..=CAMPAIGN_COUNT {
        let x = cx
            .create_campaign(fixtures::campaign(
                &cx.settings.agent,
                &format!("{token}-{i}"),
                &cx.names.number(),
                start,
                start + secs(86_400),
            ))
            .await;
        match x.str_field("campaign_id") {
            Some(id) => ids.push(id.to_string()),
            None => {
                return v.blocked_only(
                    &[&CAMPAIGNS],
                    "creating the campaigns to list",
                    x.evidence(),
                );
            }
        }
    }
    let first = cx
        .get(
            &cx.paths.campaigns(),
            &[("search", token.clone()), ("limit", PAGE.to_string())],
        )
        .await;
    let w = follow(
        cx,
        &first,
        "next_page_uri",
        "campaign_id",
        CAMPAIGN_COUNT + 2,
    )
    .await;
    let ok = first.status == 200
        && first.body()["total"].as_u64() == Some(CAMPAIGN_COUNT as u64)
        && first.body()["prev_page_uri"].is_null()
        && exactly_once(&w, &ids);
    let mut e = Evidence::new()
        .with("expected_ids", ids.clone())
        .with("pages", w.pages);
    if let Some(why) = w.broken {
        e = e.with("broken", why);
    }
    v.judge(
        &CAMPAIGNS,
        ok,
        e,
        format!("total {CAMPAIGN_COUNT} for search '{token}', prev_page_uri null first, each campaign once along next_page_uri, ending null"),
    );
}
