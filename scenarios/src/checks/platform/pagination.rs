//! `pagination`: totals, `next_page_uri` / `prev_page_uri` at every boundary, following them
//! walks every item exactly once and lands on the page each names, list items as their own
//! GET shows them, sort orders and search; on the deployment list (the spec's paginated
//! list) and the campaign list.
//!
//! The run creates five deployments and three campaigns whose names share a token, and lists
//! with `search` set to it, so other resources of the workspace do not disturb the counts.
//! Beside them it creates decoys that do not match the token, interleaved in creation
//! order: a page link that drops `search`, or a total that counts every item, shows them.
//! Each deployment is created at its own instant (the target's simulated clock moved a
//! second between them with `--sim`, a few milliseconds apart on a real clock), so that the
//! sort by `created_at` has keys to order; on a simulated clock without `--sim` they cannot
//! differ, and the sort check is skipped. One listed deployment has two connection configs
//! (three numbers), so that a list item's `phone_numbers` is every number of every
//! connection. Pages at offsets that are not multiples of their limit, and pages exactly full
//! at the end, are asked directly and their links followed ([`links`], which also walks them).

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::context::Ctx;
use super::exchange::Exchange;
use super::fixtures::{self, Kind, Makes};
use super::pagination_campaigns::{CAMPAIGNS, DECOY_CAMPAIGNS, LISTED_CAMPAIGNS};
use super::pagination_links::{self as links, PAGE, caused, exactly_once, follow_all};
use super::target::sim_clock_advance;
use super::verdicts::Verdicts;
use crate::checks::{CheckDef, Evidence};

const TOTALS: CheckDef = CheckDef::error(
    "pagination.totals",
    "total counts every match and no other item; limit and offset are echoed, on every page asked and every page a link leads to; a page holds the whole list's items from its offset, at most limit",
);
const PREV_NULL: CheckDef = CheckDef::error(
    "pagination.prev_null_on_first_page",
    "prev_page_uri is null on the first page and set on every later one (offsets that are not multiples of the limit included)",
);
const NEXT_NULL: CheckDef = CheckDef::error(
    "pagination.next_null_on_last_page",
    "next_page_uri is null on the last page (one exactly full included) and set on every page items follow",
);
const WALK: CheckDef = CheckDef::error(
    "pagination.walk",
    "following next_page_uri, then prev_page_uri back, visits every matching deployment exactly once each way and no decoy; every link leads (2xx) to the page it should, prev to max(0, offset - limit), holding that page's items; list items agree with the deployment's own GET, phone_numbers every number of every connection as created",
);
const SORT_ORDER: CheckDef = CheckDef::error(
    "pagination.sort_order",
    "sort_by=created_at orders by created_at ascending with sort_order=asc, and desc is exactly the reverse",
);
const SORT_NAME: CheckDef = CheckDef::warning(
    "pagination.sort_by_name",
    "sort_by=name orders by name, asc and desc (name as a sort field is assumed)",
);
const SEARCH: CheckDef = CheckDef::error(
    "pagination.search",
    "search finds exactly the deployments whose name contains the text, not the decoys",
);
const SEARCH_CASE: CheckDef = CheckDef::warning(
    "pagination.search_case",
    "search ignores letter case: the text in upper case finds the same deployments, and the same campaigns, as in the case they were named (the record's case-insensitive search, assumed)",
);
const SEARCH_WORDS: CheckDef = CheckDef::warning(
    "pagination.search_words",
    "a search of several words is one text: it finds the deployment whose description holds the words together, not a decoy holding the same words apart (the record's substring search of descriptions, assumed)",
);

/// The checks of this group.
pub(crate) const CHECKS: &[CheckDef] = &[
    TOTALS,
    PREV_NULL,
    NEXT_NULL,
    WALK,
    SORT_ORDER,
    SORT_NAME,
    SEARCH,
    SEARCH_WORDS,
    CAMPAIGNS,
    SEARCH_CASE,
];

/// How many deployments are listed.
const DEPLOYMENTS: usize = 5;
/// The listed deployment (numbered from 1) created with two connection configs.
const TWO_CONNECTIONS: usize = 2;

/// The deployment pages asked directly, `(offset, limit)` over the five: the walk's first and
/// last pages (first, in that order), offsets that are not multiples of the limit (the previous page of offset 1, 2
/// or 3 starts at 0), pages exactly full at the end (offset + limit = 5), the whole list on
/// one page.
const DEPLOYMENT_PAGES: &[(usize, usize)] = &[
    (0, PAGE),
    (DEPLOYMENTS - 1, PAGE),
    (1, 2),
    (3, 2),
    (1, 3),
    (2, 3),
    (3, 5),
    (0, 5),
];

const LISTED: Makes = Makes::new(Kind::Deployment, "page", DEPLOYMENTS as u32);
const DECOYS: Makes = Makes::new(Kind::Deployment, "decoy", 3);

/// What each check creates.
pub(crate) const MAKES: &[(&CheckDef, &[Makes])] = &[
    (&TOTALS, &[LISTED, DECOYS]),
    (&PREV_NULL, &[LISTED, DECOYS]),
    (&NEXT_NULL, &[LISTED, DECOYS]),
    (&WALK, &[LISTED, DECOYS]),
    (&SORT_ORDER, &[LISTED, DECOYS]),
    (&SORT_NAME, &[LISTED, DECOYS]),
    (&SEARCH, &[LISTED, DECOYS]),
    (&CAMPAIGNS, &[LISTED_CAMPAIGNS, DECOY_CAMPAIGNS]),
    (
        &SEARCH_CASE,
        &[LISTED, DECOYS, LISTED_CAMPAIGNS, DECOY_CAMPAIGNS],
    ),
    (&SEARCH_WORDS, &[LISTED, DECOYS]),
];

/// Why the sort check cannot judge a target whose clock stands still.
pub const STILL_CLOCK: &str = "the target's clock is simulated and stands still without --sim: every created_at is equal, so no order can be judged; run with --sim";

/// Lets the target's clock move before the next creation: a second of its simulated clock
/// with `--sim`, a few milliseconds of real time otherwise.
async fn tick(cx: &Ctx) {
    if cx.settings.sim {
        cx.send(Method::POST, &sim_clock_advance(), json!({"seconds": 1}))
            .await;
    } else {
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
}

/// The words of [`SEARCH_WORDS`]: searched for, the description that holds them together
/// (listed deployment 3's), and the one that holds them apart (decoy 1's).
fn words(cx: &Ctx) -> [String; 3] {
    let marker = cx.names.name("pagination-words");
    [
        format!("{marker} lead tail"),
        format!("{marker} lead tail, together"),
        format!("{marker} lead and tail, apart"),
    ]
}

/// Creates a deployment of each name, one [`tick`] apart, `two` with two connection configs
/// (one number, then two: the agent's connection both times, a number once across them),
/// those of `described` with their description; answers their ids with the numbers each
/// was created with, or the answer that refused one.
async fn deployments(
    cx: &Ctx,
    names: &[String],
    two: &str,
    described: &[(&str, &str)],
) -> Result<Vec<(String, Vec<String>)>, Exchange> {
    let mut made = Vec::new();
    for name in names {
        let count = if name == two { 3 } else { 1 };
        let numbers: Vec<String> = (0..count).map(|_| cx.names.number()).collect();
        let mut body = fixtures::deployment(&cx.settings.agent, name, &numbers[..1]);
        if let Some((_, d)) = described.iter().find(|(n, _)| n == name) {
            body["description"] = json!(d);
        }
        if count > 1 {
            let c = &cx.settings.agent.connection_id;
            body["connection_configs"] = json!([
                {"connection_id": c, "phone_numbers": [numbers[0]]},
                {"connection_id": c, "phone_numbers": [numbers[1], numbers[2]]}
            ]);
        }
        let x = cx.create_deployment(body).await;
        let id = x.str_field("deployment_id").ok_or(x.clone())?.to_string();
        made.push((id, numbers));
        tick(cx).await;
    }
    Ok(made)
}

/// Runs the group.
pub(crate) async fn run(cx: &Ctx, v: &mut Verdicts) {
    let token = cx.names.name(LISTED.label);
    let decoy = cx.names.name(DECOYS.label);
    // Matching and decoys interleaved: page-1, decoy-1, page-2, decoy-2, page-3, decoy-3,
    // page-4, page-5.
    let mut names = Vec::new();
    for i in 1..=DEPLOYMENTS {
        names.push(format!("{token}-{i}"));
        if i <= DECOYS.count as usize {
            names.push(format!("{decoy}-{i}"));
        }
    }
    let two = format!("{token}-{TWO_CONNECTIONS}");
    let [_, together, apart] = words(cx);
    let (third, first_decoy) = (format!("{token}-3"), format!("{decoy}-1"));
    let described = [
        (third.as_str(), together.as_str()),
        (first_decoy.as_str(), apart.as_str()),
    ];
    let (listed, decoys) = match deployments(cx, &names, &two, &described).await {
        Ok(all) => all
            .into_iter()
            .zip(&names)
            .partition::<Vec<_>, _>(|(_, n)| n.starts_with(&token)),
        Err(x) => {
            v.blocked_only(
                &[
                    &TOTALS,
                    &PREV_NULL,
                    &NEXT_NULL,
                    &WALK,
                    &SORT_ORDER,
                    &SORT_NAME,
                    &SEARCH,
                    &SEARCH_CASE,
                    &SEARCH_WORDS,
                ],
                "creating the deployments to list",
                x.evidence(),
            );
            return super::pagination_campaigns::campaigns(cx, v).await;
        }
    };
    let numbers: BTreeMap<String, Vec<String>> = listed.iter().map(|(m, _)| m.clone()).collect();
    let ids: Vec<String> = listed.into_iter().map(|((id, _), _)| id).collect();
    let decoys: Vec<String> = decoys.into_iter().map(|((id, _), _)| id).collect();
    let path = cx.paths.deployments();
    let whole = cx
        .get(
            &path,
            &[("search", token.clone()), ("limit", "100".to_string())],
        )
        .await;
    let everything = cx.get(&path, &[("limit", "100".to_string())]).await;
    let listing = links::Listing {
        path,
        search: token.clone(),
        id_field: "deployment_id",
        total: DEPLOYMENTS,
        ids: links::ids(whole.body(), "deployment_id"),
    };
    let probed = links::probe(cx, &listing, DEPLOYMENT_PAGES).await;
    let (first, last) = (&probed.asked[0], &probed.asked[1]);
    let mut totals: Vec<String> = listing.whole_fault(&whole, &ids).into_iter().collect();
    totals.extend(probed.own.iter().cloned());
    v.varied(
        &TOTALS,
        "total",
        [
            first.body()["total"].clone(),
            everything.body()["total"].clone(),
        ],
    );
    let pages = || Evidence::new().with("pages", probed.pages.clone());
    v.judge(
        &TOTALS,
        totals.is_empty(),
        caused(
            pages()
                .with("whole", Value::Object(whole.evidence().0))
                .with("unfiltered", Value::Object(everything.evidence().0)),
            &totals,
        ),
        format!(
            "on each page (offset, limit) of {DEPLOYMENT_PAGES:?} and each page its links lead to: total {DEPLOYMENTS} (the {} decoys not counted), the offset and limit asked echoed, the whole list's items from that offset",
            decoys.len(),
        ),
    );
    let link = |x: &Exchange, k: &str| x.body()[k].clone();
    v.varied(
        &PREV_NULL,
        "prev_page_uri",
        [link(first, "prev_page_uri"), link(last, "prev_page_uri")],
    );
    v.judge(
        &PREV_NULL,
        probed.prev.is_empty(),
        caused(pages(), &probed.prev),
        "\"prev_page_uri\": null on each page at offset 0, a string on each page after it",
    );
    v.varied(
        &NEXT_NULL,
        "next_page_uri",
        [link(first, "next_page_uri"), link(last, "next_page_uri")],
    );
    v.judge(
        &NEXT_NULL,
        probed.next.is_empty(),
        caused(pages(), &probed.next),
        "\"next_page_uri\": null on each page with offset + limit >= total (an exactly full last page included), a string on each page items follow",
    );
    let unfiltered = field_of(&everything, "deployment_id");
    let kinds = [
        ids.iter()
            .any(|i| unfiltered.contains(i))
            .then_some("matching"),
        decoys
            .iter()
            .any(|i| unfiltered.contains(i))
            .then_some("decoy"),
    ];
    v.varied(&WALK, "listed without search", kinds.into_iter().flatten());
    v.varied(
        &SEARCH,
        "listed without search",
        kinds.into_iter().flatten(),
    );
    walk(cx, v, (first, last), &ids, &probed, &whole, &numbers).await;
    sorts(cx, v, &token, &ids).await;
    search(cx, v, &token, &ids).await;
    search_words(cx, v, &ids).await;
    super::pagination_campaigns::campaigns(cx, v).await;
    search_case(cx, v, &token, &ids).await;
}

/// The walks both ways from the first and the last page, the links of the pages asked
/// directly, and every deployment item read against the deployment's own GET.
async fn walk(
    cx: &Ctx,
    v: &mut Verdicts,
    (first, last): (&Exchange, &Exchange),
    ids: &[String],
    probed: &links::Probed,
    whole: &Exchange,
    numbers: &BTreeMap<String, Vec<String>>,
) {
    let max = DEPLOYMENTS.div_ceil(PAGE) + 2;
    let forward = follow_all(cx, first, "next_page_uri", "deployment_id", max).await;
    let backward = follow_all(cx, last, "prev_page_uri", "deployment_id", max).await;
    let mut items: Vec<Value> = whole.body()["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    items.extend(probed.items.iter().cloned());
    items.extend(forward.items.iter().cloned());
    items.extend(backward.items.iter().cloned());
    let values = links::against_reads(
        cx,
        "deployment_id",
        &items,
        ids,
        |id| cx.paths.deployment(id),
        numbers,
    )
    .await;
    let mut faults = Vec::new();
    for (way, w) in [("forward", &forward), ("backward", &backward)] {
        if let Some(why) = &w.broken {
            faults.push(format!("the walk {way}: {why}"));
        } else if !exactly_once(w, ids) {
            faults.push(format!(
                "the walk {way} saw {:?}, not each of {ids:?} once",
                w.seen
            ));
        }
    }
    faults.extend(probed.links.iter().cloned());
    faults.extend(values.faults.iter().cloned());
    let e = Evidence::new()
        .with("expected_ids", ids.to_vec())
        .with("forward", forward.pages.clone())
        .with("backward", backward.pages.clone())
        .with("pages", probed.pages.clone())
        .with("values", values.evidence.clone());
    if !values.numbers_shown.is_empty() {
        v.varied(
            &WALK,
            "phone numbers per item",
            values.numbers_shown.clone(),
        );
    }
    v.judge(
        &WALK,
        faults.is_empty(),
        caused(e, &faults),
        format!("each of the {DEPLOYMENTS} deployments exactly once (and nothing else) following next_page_uri from the first page, and again following prev_page_uri from the last; each link of the pages {DEPLOYMENT_PAGES:?} answering 2xx with the page at offset + limit (next) or max(0, offset - limit) (prev) and its items; each item's fields as the deployment's GET shows them, phone_numbers the numbers of every connection config as created"),
    );
}

pub(super) fn field_of(x: &Exchange, field: &str) -> Vec<String> {
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
    let mut reversed = field_of(&desc, "deployment_id");
    reversed.reverse();
    let ok = asc.status == 200
        && desc.status == 200
        && a.len() == ids.len()
        && d.len() == ids.len()
        && a.windows(2).all(|w| w[0] <= w[1])
        && field_of(&asc, "deployment_id") == reversed;
    if cx.simulated_clock && !cx.settings.sim {
        v.add(crate::checks::Check::skip(&SORT_ORDER, STILL_CLOCK));
    }
    v.varied(&SORT_ORDER, "created_at", field_of(&asc, "created_at"));
    v.judge(
        &SORT_ORDER,
        ok,
        Exchange::all(&[&asc, &desc]),
        format!("all {DEPLOYMENTS} deployments, created_at ascending with asc; with desc the same items in exactly the reverse order"),
    );

    let asc = sorted("name", "asc").await;
    let desc = sorted("name", "desc").await;
    let mut want: Vec<String> = (1..=DEPLOYMENTS).map(|i| format!("{token}-{i}")).collect();
    let asc_ok = field_of(&asc, "name") == want;
    want.reverse();
    let desc_ok = field_of(&desc, "name") == want;
    v.varied(&SORT_NAME, "name", field_of(&asc, "name"));
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
        format!("search '{token}' finds the {DEPLOYMENTS} deployments (no decoy); '{token}-3' finds one, with total 1"),
    );
}

/// `pagination.search_words`: the words together find the deployment whose description
/// holds them together (listed deployment 3), not the decoy holding them apart.
async fn search_words(cx: &Ctx, v: &mut Verdicts, ids: &[String]) {
    let [text, together, apart] = words(cx);
    let x = cx
        .get(
            &cx.paths.deployments(),
            &[("search", text.clone()), ("limit", "100".to_string())],
        )
        .await;
    v.varied(
        &SEARCH_WORDS,
        "description",
        [together.as_str(), apart.as_str()],
    );
    v.judge(
        &SEARCH_WORDS,
        x.status == 200
            && field_of(&x, "deployment_id") == vec![ids[2].clone()]
            && x.body()["total"] == json!(1),
        x.evidence(),
        format!(
            "search '{text}' finds the one deployment described '{together}' (total 1), not the decoy described '{apart}'"
        ),
    );
}

/// `pagination.search_case`: the deployments' and the campaigns' search text in upper case
/// finds what it finds in the case they were named (the campaigns made by
/// [`super::pagination_campaigns::campaigns`]).
async fn search_case(cx: &Ctx, v: &mut Verdicts, token: &str, ids: &[String]) {
    let find = |path: Vec<String>, text: String| async move {
        cx.get(&path, &[("search", text), ("limit", "100".to_string())])
            .await
    };
    let sorted = |x: &Exchange, field: &str| {
        let mut v = field_of(x, field);
        v.sort();
        v
    };
    let campaign_token = cx.names.name(LISTED_CAMPAIGNS.label);
    let deployments_upper = find(cx.paths.deployments(), token.to_uppercase()).await;
    let campaigns_named = find(cx.paths.campaigns(), campaign_token.clone()).await;
    let campaigns_upper = find(cx.paths.campaigns(), campaign_token.to_uppercase()).await;
    let mut want = ids.to_vec();
    want.sort();
    let campaign_ids = sorted(&campaigns_named, "campaign_id");
    v.varied(
        &SEARCH_CASE,
        "search",
        [token.to_string(), token.to_uppercase()],
    );
    v.judge(
        &SEARCH_CASE,
        deployments_upper.status == 200
            && sorted(&deployments_upper, "deployment_id") == want
            && campaigns_upper.status == 200
            && !campaign_ids.is_empty()
            && sorted(&campaigns_upper, "campaign_id") == campaign_ids,
        Exchange::all(&[&deployments_upper, &campaigns_named, &campaigns_upper]),
        format!(
            "search '{}' finds the {DEPLOYMENTS} deployments named with '{token}'; search '{}' finds the campaigns '{campaign_token}' finds",
            token.to_uppercase(),
            campaign_token.to_uppercase()
        ),
    );
}
