//! Part of the `pagination` group ([`super::pagination`]): the campaign list pages the way
//! the deployment list does. Three campaigns whose names share a token, and decoys that do
//! not, are listed with `search`: the total, the walk along `next_page_uri`, each page of a
//! table of offsets and limits with its links, the status filter (compared by the oracle),
//! and each item against the campaign's own GET.

use std::collections::BTreeMap;

use serde_json::Value;

use super::context::Ctx;
use super::fixtures::{self, Kind, Makes, secs};
use super::pagination_links::{self as links, PAGE, caused, exactly_once, follow_all};
use super::verdicts::Verdicts;
use crate::checks::{CheckDef, Evidence};

pub(super) const CAMPAIGNS: CheckDef = CheckDef::error(
    "pagination.campaign_list",
    "the campaign list pages the same way: total, search, next_page_uri walk without the decoys, links null or set at every boundary and leading to the page they name, items as each campaign's own GET shows them",
);

/// How many campaigns are listed.
const CAMPAIGN_COUNT: usize = 3;
/// The campaign pages asked directly, over the three likewise.
const CAMPAIGN_PAGES: &[(usize, usize)] = &[(0, 2), (1, 2), (2, 2), (1, 1), (2, 1), (0, 3)];

pub(super) const LISTED_CAMPAIGNS: Makes =
    Makes::new(Kind::Campaign, "page-campaign", CAMPAIGN_COUNT as u32);
pub(super) const DECOY_CAMPAIGNS: Makes = Makes::new(Kind::Campaign, "decoy-campaign", 2);

pub(super) async fn campaigns(cx: &Ctx, v: &mut Verdicts) {
    let token = cx.names.name(LISTED_CAMPAIGNS.label);
    let decoy = cx.names.name(DECOY_CAMPAIGNS.label);
    let start = match cx.now().await {
        Ok(n) => n.at + secs(3600),
        Err(x) => return v.blocked_only(&[&CAMPAIGNS], "reading the target's time", x.evidence()),
    };
    let mut ids = Vec::new();
    let mut decoys = Vec::new();
    for i in 1..=CAMPAIGN_COUNT {
        let mut names = vec![(format!("{token}-{i}"), true)];
        if i <= DECOY_CAMPAIGNS.count as usize {
            names.push((format!("{decoy}-{i}"), false));
        }
        for (name, matching) in names {
            let x = cx
                .create_campaign(fixtures::campaign(
                    &cx.settings.agent,
                    &name,
                    &cx.names.number(),
                    start,
                    start + secs(86_400),
                ))
                .await;
            match x.str_field("campaign_id") {
                Some(id) if matching => ids.push(id.to_string()),
                Some(id) => decoys.push(id.to_string()),
                None => {
                    return v.blocked_only(
                        &[&CAMPAIGNS],
                        "creating the campaigns to list",
                        x.evidence(),
                    );
                }
            }
        }
    }
    let path = cx.paths.campaigns();
    let first = cx
        .get(
            &path,
            &[("search", token.clone()), ("limit", PAGE.to_string())],
        )
        .await;
    let everything = cx.get(&path, &[("limit", "100".to_string())]).await;
    // The status filter, both ways (the oracle compares the items with the reference's).
    for status in ["scheduled", "cancelled"] {
        cx.get(
            &path,
            &[
                ("search", token.clone()),
                ("campaign_status", status.to_string()),
            ],
        )
        .await;
    }
    v.varied(
        &CAMPAIGNS,
        "total",
        [
            first.body()["total"].clone(),
            everything.body()["total"].clone(),
        ],
    );
    let w = follow_all(
        cx,
        &first,
        "next_page_uri",
        "campaign_id",
        CAMPAIGN_COUNT + 2,
    )
    .await;
    let whole = cx
        .get(
            &path,
            &[("search", token.clone()), ("limit", "100".to_string())],
        )
        .await;
    let listing = links::Listing {
        path,
        search: token.clone(),
        id_field: "campaign_id",
        total: CAMPAIGN_COUNT,
        ids: links::ids(whole.body(), "campaign_id"),
    };
    let probed = links::probe(cx, &listing, CAMPAIGN_PAGES).await;
    let mut items: Vec<Value> = whole.body()["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    items.extend(probed.items.iter().cloned());
    items.extend(w.items.iter().cloned());
    let values = links::against_reads(
        cx,
        "campaign_id",
        &items,
        &ids,
        |id| cx.paths.campaign(id),
        &BTreeMap::new(),
    )
    .await;
    let mut faults = Vec::new();
    if first.status != 200
        || first.body()["total"].as_u64() != Some(CAMPAIGN_COUNT as u64)
        || !first.body()["prev_page_uri"].is_null()
    {
        faults.push(format!(
            "the first page (search, limit {PAGE}) answered {}, total {}, prev_page_uri {}",
            first.outcome(),
            first.body()["total"],
            first.body()["prev_page_uri"]
        ));
    }
    if let Some(why) = &w.broken {
        faults.push(format!("the walk along next_page_uri: {why}"));
    } else if !exactly_once(&w, &ids) {
        faults.push(format!(
            "the walk along next_page_uri saw {:?}, not each of {ids:?} once",
            w.seen
        ));
    }
    faults.extend(listing.whole_fault(&whole, &ids));
    for f in [&probed.own, &probed.next, &probed.prev, &probed.links] {
        faults.extend(f.iter().cloned());
    }
    faults.extend(values.faults.iter().cloned());
    v.varied(&CAMPAIGNS, "next_page_uri null", probed.next_null.clone());
    let e = Evidence::new()
        .with("expected_ids", ids.clone())
        .with("decoy_ids", decoys)
        .with("walk", w.pages)
        .with("pages", probed.pages)
        .with("values", values.evidence);
    v.judge(
        &CAMPAIGNS,
        faults.is_empty(),
        caused(e, &faults),
        format!("total {CAMPAIGN_COUNT} for search '{token}', prev_page_uri null first, each campaign once (no decoy) along next_page_uri, ending null; on each page (offset, limit) of {CAMPAIGN_PAGES:?}: total, offset and limit echoed, the whole list's items from the offset, next_page_uri null exactly when offset + limit >= total, prev_page_uri null exactly at offset 0, each link answering 2xx with the page at offset + limit or max(0, offset - limit) and its items; each item's fields as the campaign's GET shows them"),
    );
}
