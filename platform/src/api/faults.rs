//! Fault rules under `/sim/v1/faults` (see [`crate::faults`]): list, add, delete one,
//! delete all. A rule added with a workspace's key applies to that workspace's requests
//! only, and only that key lists and deletes it; an operator's key (a clock or journal
//! admin key, or one that opens every workspace) adds rules for every request and sees and
//! deletes every rule ([`Scope`]).

use contracts::validate;
use contracts::wire::Page;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::StatusCode;
use warp::reply::Response;

use contracts::error::{Loc, ValidationErrors};
use contracts::wire::FaultRule;

use super::auth::scope_key;
use super::{
    BodyStream, RequestMeta, body, meta, ok, read_json, respond, with_app, with_page_uris,
};
use crate::app::App;
use crate::auth::Scope;
use crate::error::ApiError;

/// The fault routes.
pub(crate) fn routes(app: App) -> BoxedFilter<(Response,)> {
    let all = || warp::path!("sim" / "v1" / "faults");
    let key = || scope_key(app.clone());
    let list = all()
        .and(super::get())
        .and(key())
        .and(meta())
        .and(with_app(app.clone()))
        .map(list);
    let add = all()
        .and(warp::post())
        .and(key())
        .and(meta())
        .and(body())
        .and(with_app(app.clone()))
        .then(add);
    let clear = all()
        .and(warp::delete())
        .and(key())
        .and(with_app(app.clone()))
        .map(clear);
    let remove = warp::path!("sim" / "v1" / "faults" / String)
        .and(warp::delete())
        .and(key())
        .and(with_app(app.clone()))
        .map(remove);
    list.or(add)
        .unify()
        .or(clear)
        .unify()
        .or(remove)
        .unify()
        .map(respond)
        .boxed()
}

/// An empty 204.
fn no_content() -> Response {
    let mut r = Response::new(Vec::new().into());
    *r.status_mut() = StatusCode::NO_CONTENT;
    r
}

fn list(scope: Scope, meta: RequestMeta, app: App) -> Result<Response, ApiError> {
    let (offset, limit) = validate::cohort_list_query(&meta.query_pairs())?;
    let all = app.faults.list(&scope);
    let total = all.len() as u64;
    let items = all
        .into_iter()
        .skip(offset.min(usize::MAX as u64) as usize)
        .take(limit as usize)
        .collect();
    ok(&with_page_uris(
        &app,
        &meta,
        Page {
            items,
            total,
            limit,
            offset,
            next_page_uri: None,
            prev_page_uri: None,
        },
    ))
}

async fn add(
    scope: Scope,
    meta: RequestMeta,
    body: BodyStream,
    app: App,
) -> Result<Response, ApiError> {
    let value = read_json(&app, &meta, body).await?;
    let rule = validate::fault_rule(&value, app.validation)?;
    let applies_to = match scope {
        Scope::Operator => None,
        Scope::Workspaces(patterns) => {
            within(&rule, &patterns)?;
            Some(patterns)
        }
    };
    ok(&app.faults.add(rule, applies_to))
}

fn clear(scope: Scope, app: App) -> Result<Response, ApiError> {
    app.faults.clear(&scope);
    Ok(no_content())
}

fn remove(id: String, scope: Scope, app: App) -> Result<Response, ApiError> {
    if app.faults.remove(&id, &scope) {
        Ok(no_content())
    } else {
        Err(ApiError::NotFound {
            code: "fault_not_found",
            message: format!("no fault rule '{id}'; GET /sim/v1/faults lists them"),
        })
    }
}

/// Refuses a workspace's rule whose `org_id` or `workspace_id` matcher names a workspace its
/// key does not open: such a rule could never fire, as it applies to the key's workspace only.
fn within(rule: &FaultRule, patterns: &[crate::store::WorkspaceRef]) -> Result<(), ApiError> {
    let fits = |org: Option<&str>, ws: Option<&str>| {
        patterns.iter().any(|p| {
            (p.org_id == "*" || org.is_none_or(|o| o == p.org_id))
                && (p.workspace_id == "*" || ws.is_none_or(|w| w == p.workspace_id))
        })
    };
    let org = rule.org_id.as_deref();
    let ws = rule.workspace_id.as_deref();
    let mut errors = ValidationErrors::new();
    if !fits(org, None) {
        errors.value_error(
            &Loc::body().at("org_id"),
            "a rule added with a workspace's key applies to that workspace's requests only: leave org_id out, or name the key's own org",
        );
    } else if !fits(org, ws) {
        errors.value_error(
            &Loc::body().at("workspace_id"),
            "a rule added with a workspace's key applies to that workspace's requests only: leave workspace_id out, or name the key's own workspace",
        );
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::Validation(errors))
    }
}
