//! The list isolation check of the `auth` group (it needs another workspace): one
//! deployment and one campaign named with the same token in each workspace; each
//! workspace's lists, searched by the token and not, show its own and never the other's.

use reqwest::Method;

use super::context::Ctx;
use super::exchange::Body;
use super::exchange::Exchange;
use super::fixtures::{self, Kind, Makes, Side, secs};
use super::target::Key;
use super::verdicts::Verdicts;
use crate::checks::CheckDef;

pub(super) const LIST_ISOLATION: CheckDef = CheckDef::error(
    "auth.list_isolation",
    "the deployment and campaign lists of a workspace never show another workspace's items, with or without search",
);

/// What it creates: the same in both workspaces.
pub(super) const ISOLATED: [Makes; 4] = [
    Makes::new(Kind::Deployment, "isolation", 1),
    Makes::new(Kind::Campaign, "isolation", 1),
    Makes::new(Kind::Deployment, "isolation", 1).in_other(),
    Makes::new(Kind::Campaign, "isolation", 1).in_other(),
];

/// One deployment and one campaign named with the same token in each workspace; each
/// workspace's lists show its own and never the other's.
pub(super) async fn run(cx: &Ctx, v: &mut Verdicts, start: chrono::DateTime<chrono::Utc>) {
    let token = cx.names.name(ISOLATED[0].label);
    let mut made: Vec<(Side, &str, String)> = Vec::new();
    let mut calls = Vec::new();
    for side in [Side::Main, Side::Other] {
        let d = cx
            .create_deployment_in(
                side,
                fixtures::deployment(&cx.settings.agent, &token, &[cx.names.number()]),
            )
            .await;
        let c = cx
            .create_campaign_in(
                side,
                fixtures::campaign(
                    &cx.settings.agent,
                    &token,
                    &cx.names.number(),
                    start,
                    start + secs(86_400),
                ),
            )
            .await;
        for (x, kind, field) in [
            (&d, "deployments", "deployment_id"),
            (&c, "campaigns", "campaign_id"),
        ] {
            match x.str_field(field) {
                Some(id) => made.push((side, kind, id.to_string())),
                None => {
                    return v.blocked_only(
                        &[&LIST_ISOLATION],
                        &format!("creating {kind} in both workspaces"),
                        x.evidence(),
                    );
                }
            }
        }
    }
    let mut leaks = Vec::new();
    let mut own_listed = Vec::new();
    for side in [Side::Main, Side::Other] {
        let (ws, paths) = cx.side(side);
        for (kind, path) in [
            ("deployments", paths.deployments()),
            ("campaigns", paths.campaigns()),
        ] {
            for query in [
                vec![("search", token.clone()), ("limit", "100".to_string())],
                vec![("limit", "100".to_string())],
            ] {
                let x = cx
                    .http
                    .call(Method::GET, &path, &query, Key::Value(&ws.key), Body::Empty)
                    .await;
                let field = if kind == "deployments" {
                    "deployment_id"
                } else {
                    "campaign_id"
                };
                let ids: Vec<&str> = x.body()["items"]
                    .as_array()
                    .map(|items| items.iter().filter_map(|i| i[field].as_str()).collect())
                    .unwrap_or_default();
                for (s, k, id) in &made {
                    if *k == kind && ids.contains(&id.as_str()) {
                        if *s == side {
                            own_listed.push(format!("{side:?}"));
                        } else {
                            leaks.push(format!(
                                "{kind} {id} of the {s:?} workspace listed in the {side:?} one"
                            ));
                        }
                    }
                }
                calls.push(x);
            }
        }
    }
    v.varied(
        &LIST_ISOLATION,
        "workspace listing its own item",
        own_listed.clone(),
    );
    let ok = leaks.is_empty() && calls.iter().all(|x| x.status == 200) && own_listed.len() == 8;
    v.judge(
        &LIST_ISOLATION,
        ok,
        Exchange::all(&calls.iter().collect::<Vec<_>>())
            .with("made", made.iter().map(|(s, k, id)| format!("{s:?} {k} {id}")).collect::<Vec<_>>())
            .with("leaks", leaks),
        format!("each workspace's deployment and campaign lists (search '{token}', and no search) show its own item named so and never the other workspace's"),
    );
}
