//! Fault rules under `/sim/v1/faults` (see [`crate::faults`]): list, add, delete one,
//! delete all. Any workspace's key opens them.

use contracts::validate;
use contracts::wire::Page;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::StatusCode;
use warp::reply::Response;

use super::auth::authorize_any;
use super::{
    BodyStream, RequestMeta, body, meta, ok, read_json, respond, with_app, with_page_uris,
};
use crate::app::App;
use crate::error::ApiError;

/// The fault routes.
pub fn routes(app: App) -> BoxedFilter<(Response,)> {
    let all = || warp::path!("sim" / "v1" / "faults");
    let list = all()
        .and(super::get())
        .and(meta())
        .and(with_app(app.clone()))
        .then(list);
    let add = all()
        .and(warp::post())
        .and(meta())
        .and(body())
        .and(with_app(app.clone()))
        .then(add);
    let clear = all()
        .and(warp::delete())
        .and(meta())
        .and(with_app(app.clone()))
        .then(clear);
    let remove = warp::path!("sim" / "v1" / "faults" / String)
        .and(warp::delete())
        .and(meta())
        .and(with_app(app))
        .then(remove);
    list.or(add)
        .unify()
        .or(clear)
        .unify()
        .or(remove)
        .unify()
        .boxed()
}

fn no_content() -> Response {
    let mut r = Response::new(Vec::new().into());
    *r.status_mut() = StatusCode::NO_CONTENT;
    r
}

async fn list(meta: RequestMeta, app: App) -> Response {
    respond((|| {
        authorize_any(&app, &meta)?;
        let (offset, limit) = validate::cohort_list_query(&meta.query_pairs())?;
        let all = app.faults.list();
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
    })())
}

async fn add(meta: RequestMeta, body: BodyStream, app: App) -> Response {
    respond(
        async {
            authorize_any(&app, &meta)?;
            let value = read_json(&app, &meta, body).await?;
            let rule = validate::fault_rule(&value, app.validation)?;
            ok(&app.faults.add(rule))
        }
        .await,
    )
}

async fn clear(meta: RequestMeta, app: App) -> Response {
    respond((|| {
        authorize_any(&app, &meta)?;
        app.faults.clear();
        Ok(no_content())
    })())
}

async fn remove(id: String, meta: RequestMeta, app: App) -> Response {
    respond((|| {
        authorize_any(&app, &meta)?;
        if app.faults.remove(&id) {
            Ok(no_content())
        } else {
            Err(ApiError::NotFound {
                code: "fault_not_found",
                message: format!("no fault rule '{id}'; GET /sim/v1/faults lists them"),
            })
        }
    })())
}
