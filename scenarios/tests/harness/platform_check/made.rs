//! What `--dry-run` says each check creates is what a run creates: every campaign,
//! deployment, cohort and instant outbound call a full run (`--sim`, both workspaces) makes on
//! the unmodified mock, seen by a proxy that changes nothing, against the groups' `MAKES`
//! tables.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use reqwest::Method;
use scenarios::checks::Outcome;
use scenarios::checks::platform::GROUPS;
use scenarios::checks::platform::fixtures::{Kind, Makes, NAME_PREFIX, Side};

use super::support::{Mutation, Req, WS, WS2, run, sim_clock, spawn};

/// What a successful request created: its kind, workspace and name.
fn created(req: &Req) -> Option<(Kind, Side, String)> {
    let side = match req.workspace()? {
        w if w == WS => Side::Main,
        w if w == WS2 => Side::Other,
        _ => return None,
    };
    let name = || {
        req.json()
            .and_then(|b| b["name"].as_str().map(str::to_string))
            .or_else(|| req.form_text("name"))
            .unwrap_or_default()
    };
    let kind = if req.is(Method::POST, &["campaigns"]) {
        Kind::Campaign
    } else if req.is(Method::POST, &["deployments"]) {
        Kind::Deployment
    } else if req.is(Method::POST, &["outbounds"]) {
        return Some((Kind::OutboundCall, side, String::new()));
    } else if ["campaigns", "deployments"].iter().any(|p| {
        req.is(Method::POST, &[p, "*", "cohorts", "upload"])
            || req.is(Method::POST, &[p, "*", "cohorts", "stream"])
    }) {
        Kind::Cohort
    } else {
        return None;
    };
    Some((kind, side, name()))
}

/// The label a created name carries: the longest declared label of its kind and workspace
/// that the name (less `harness-check-{run}-`) starts with.
fn label_of(declared: &[Makes], kind: Kind, side: Side, name: &str) -> Option<&'static str> {
    let rest = name.strip_prefix(NAME_PREFIX)?.get(7..)?;
    declared
        .iter()
        .filter(|m| m.kind == kind && m.side == side && rest.starts_with(m.label))
        .map(|m| m.label)
        .max_by_key(|l| l.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_names_what_a_run_creates() {
    let seen: Arc<Mutex<Vec<(Kind, Side, String)>>> = Arc::default();
    let record = seen.clone();
    let m = Mutation {
        response: Some(Box::new(move |req, resp| {
            if (200..300).contains(&resp.status)
                && let Some(c) = created(req)
            {
                record.lock().unwrap().push(c);
            }
        })),
        ..Mutation::default()
    };
    let mock = spawn(Some(sim_clock()), Some(m)).await;
    let report = run(&mock.url, true, true).await;
    mock.stop().await;
    // Every check passes, the oracle's included.
    let not_passed: Vec<&str> = report
        .checks
        .iter()
        .filter(|c| c.result != Outcome::Pass)
        .map(|c| c.id.as_str())
        .collect();
    assert!(not_passed.is_empty(), "{not_passed:?}");

    // Declared: each distinct entry of the tables once (an entry several checks share is
    // one set of resources).
    let mut declared: Vec<Makes> = Vec::new();
    for g in GROUPS {
        for (_, makes) in g.makes {
            for m in *makes {
                if !declared.contains(m) {
                    declared.push(*m);
                }
            }
        }
    }
    // Outbound calls have no name: counted together.
    let key = |m: &Makes| match m.kind {
        Kind::OutboundCall => (m.kind, m.side, ""),
        _ => (m.kind, m.side, m.label),
    };
    let mut want: BTreeMap<(Kind, Side, &str), u32> = BTreeMap::new();
    for m in &declared {
        *want.entry(key(m)).or_default() += m.count;
    }
    let mut got: BTreeMap<(Kind, Side, &str), u32> = BTreeMap::new();
    let mut unnamed = Vec::new();
    for (kind, side, name) in seen.lock().unwrap().iter() {
        let label = if *kind == Kind::OutboundCall {
            Some("")
        } else {
            label_of(&declared, *kind, *side, name)
        };
        match label {
            Some(l) => *got.entry((*kind, *side, l)).or_default() += 1,
            None => unnamed.push(format!("{kind:?} {side:?} {name}")),
        }
    }
    assert!(
        unnamed.is_empty(),
        "created but not in any MAKES table: {unnamed:#?}"
    );
    assert_eq!(
        got, want,
        "created (left) against what --dry-run says (right)"
    );
}
