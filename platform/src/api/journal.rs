//! The request journal under `/sim/v1/journal` (see [`crate::journal`]): the entries, the
//! summary (API coverage), and the reset between tests. A workspace's key lists, summarises
//! and deletes its workspace's entries; an operator's key (a clock or journal admin key, or
//! one that opens every workspace) all of them ([`Scope`]).

use contracts::validate;
use contracts::wire::Page;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::StatusCode;
use warp::reply::Response;

use super::auth::scope_key;
use super::{RequestMeta, meta, ok, respond, with_app, with_page_uris};
use crate::app::App;
use crate::auth::Scope;
use crate::error::ApiError;

/// `GET /sim/v1/journal`, `DELETE /sim/v1/journal`, `GET /sim/v1/journal/summary`.
pub(crate) fn routes(app: App) -> BoxedFilter<(Response,)> {
    let list = warp::path!("sim" / "v1" / "journal")
        .and(super::get())
        .and(scope_key(app.clone()))
        .and(meta())
        .and(with_app(app.clone()))
        .map(list);
    let reset = warp::path!("sim" / "v1" / "journal")
        .and(warp::delete())
        .and(scope_key(app.clone()))
        .and(with_app(app.clone()))
        .map(reset);
    let summary = warp::path!("sim" / "v1" / "journal" / "summary")
        .and(super::get())
        .and(scope_key(app.clone()))
        .and(with_app(app))
        .map(summary);
    list.or(reset)
        .unify()
        .or(summary)
        .unify()
        .map(respond)
        .boxed()
}

fn list(scope: Scope, meta: RequestMeta, app: App) -> Result<Response, ApiError> {
    let filter = validate::journal_query(&meta.query_pairs())?;
    let (items, total) = app.journal.list(&filter, &scope);
    ok(&with_page_uris(
        &app,
        &meta,
        Page {
            items,
            total,
            limit: filter.limit,
            offset: filter.offset,
            next_page_uri: None,
            prev_page_uri: None,
        },
    ))
}

fn reset(scope: Scope, app: App) -> Result<Response, ApiError> {
    app.journal.reset(&scope, app.clock.now());
    let mut r = Response::new(Vec::new().into());
    *r.status_mut() = StatusCode::NO_CONTENT;
    Ok(r)
}

fn summary(scope: Scope, app: App) -> Result<Response, ApiError> {
    ok(&app.journal.summary(&scope))
}
