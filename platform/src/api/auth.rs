//! API-key authentication of a request: [`authorize`], which checks a request's
//! `X-API-Key` against the workspace of its path, [`authorize_scope`] for the journal and
//! the fault rules (a workspace's key sees its own workspace's, an operator's key
//! everyone's: [`Scope`]), and [`authorize_clock`] for the one clock of the instance. The
//! keys themselves are [`crate::auth`].
//!
//! Routes take the caller through a filter ([`workspace_key`], [`scope_key`],
//! [`reset_key`], [`clock_key`]) placed after the route's path and method, so that a
//! handler holds only what differs: a refused key is a rejection ([`Refused`]) that
//! [`answer_refusal`] turns into the 401 or 403, once no other route takes the request.

use warp::http::HeaderName;
use warp::reply::Response;
use warp::{Filter, Rejection};

use super::{RequestMeta, meta, with_app};
use crate::app::App;
use crate::auth::{ClockMover, KeyMatch, Principal, Scope};
use crate::error::ApiError;
use crate::store::WorkspaceRef;

/// `X-API-Key`, the header every platform request carries its key in.
pub(crate) static API_KEY: HeaderName = HeaderName::from_static("x-api-key");

/// A request a key filter refused, with the answer it gets.
#[derive(Debug)]
pub(crate) struct Refused(ApiError);

impl warp::reject::Reject for Refused {}

/// The answer to a request a key filter refused; any other rejection goes on to the next
/// route (in the end [`super::route_miss`]).
pub(crate) async fn answer_refusal(r: Rejection) -> Result<Response, Rejection> {
    match r.find::<Refused>() {
        Some(Refused(e)) => Ok(e.clone().into_response()),
        None => Err(r),
    }
}

/// Runs a key check on the request, a refusal rejecting it with [`Refused`]. The check
/// is given the request's [`RequestMeta`] and the configured keys its key matched when the
/// intercept found them ([`crate::auth::KeyTable::matching`], an extension of the
/// request), so that a workspace's key is not compared again.
fn key_filter<T: Send + 'static>(
    app: App,
    check: impl Fn(&App, &RequestMeta, Option<&KeyMatch>) -> Result<T, ApiError>
    + Clone
    + Send
    + Sync
    + 'static,
) -> impl Filter<Extract = (T,), Error = Rejection> + Clone {
    key_filter_meta(app, check).map(|found, _meta| found)
}

/// [`key_filter`], giving the handler the [`RequestMeta`] it read too (read once).
fn key_filter_meta<T: Send + 'static>(
    app: App,
    check: impl Fn(&App, &RequestMeta, Option<&KeyMatch>) -> Result<T, ApiError>
    + Clone
    + Send
    + Sync
    + 'static,
) -> impl Filter<Extract = (T, RequestMeta), Error = Rejection> + Clone {
    meta()
        .and(warp::ext::optional::<KeyMatch>())
        .and(with_app(app))
        .and_then(move |meta: RequestMeta, keys: Option<KeyMatch>, app: App| {
            let found = match check(&app, &meta, keys.as_ref()) {
                Ok(found) => Ok((found, meta)),
                Err(e) => Err(warp::reject::custom(Refused(e))),
            };
            async move { found }
        })
        .untuple_one()
}

/// The `{org_id}` and `{workspace_id}` of a path `…/orgs/{org_id}/workspaces/{workspace_id}/…`.
fn workspace_of(path: &str) -> Option<(&str, &str)> {
    // The first four segments in a row `orgs`, an id, `workspaces`, an id (no allocation:
    // every request to a workspace's route asks).
    let mut segments = contracts::operations::path_segments(path);
    let (mut a, mut b, mut c) = (segments.next()?, segments.next()?, segments.next()?);
    for d in segments {
        if a == "orgs" && c == "workspaces" {
            return Some((b, d));
        }
        (a, b, c) = (b, c, d);
    }
    None
}

/// Who calls a workspace's route: the key of `X-API-Key` checked against the workspace of
/// the path ([`authorize`]).
pub(crate) fn workspace_key(
    app: App,
) -> impl Filter<Extract = (Principal,), Error = Rejection> + Clone {
    workspace_key_meta(app).map(|who, _meta| who)
}

/// [`workspace_key`] and the request's [`RequestMeta`], for a handler that reads it.
pub(crate) fn workspace_key_meta(
    app: App,
) -> impl Filter<Extract = (Principal, RequestMeta), Error = Rejection> + Clone {
    key_filter_meta(app, |app, meta, keys| {
        let (org, ws) = workspace_of(&meta.path).unwrap_or_default();
        authorize(app, meta, keys, org, ws)
    })
}

/// The workspace a reset clears ([`authorize_reset`]).
pub(crate) fn reset_key(
    app: App,
) -> impl Filter<Extract = (WorkspaceRef,), Error = Rejection> + Clone {
    key_filter(app, |app, meta, keys| {
        let (org, ws) = workspace_of(&meta.path).unwrap_or_default();
        authorize_reset(app, meta, keys, org, ws)
    })
}

/// What the caller may see and clear of the journal and the fault rules
/// ([`authorize_scope`]).
pub(crate) fn scope_key(app: App) -> impl Filter<Extract = (Scope,), Error = Rejection> + Clone {
    key_filter(app, |app, meta, _| authorize_scope(app, meta))
}

/// A caller that may read the clock, or with `moving` move it ([`authorize_clock`]).
pub(crate) fn clock_key(
    app: App,
    moving: bool,
) -> impl Filter<Extract = (), Error = Rejection> + Clone {
    key_filter(app, move |app, meta, _| authorize_clock(app, meta, moving)).untuple_one()
}

/// A path segment matched as a parameter (any one that is not empty) and not kept: the
/// key filters read the workspace's ids from the path, so the route need not copy them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AnySegment;

impl std::str::FromStr for AnySegment {
    type Err = std::convert::Infallible;

    fn from_str(_: &str) -> Result<Self, Self::Err> {
        Ok(AnySegment)
    }
}

/// The path of a workspace's routes, `/{root…}/orgs/{org_id}/workspaces/{workspace_id}`,
/// and the route's own segments after a `;` (as [`warp::path!`] takes them); the ids are read by
/// the key filters, so a route extracts only its own.
macro_rules! workspace_path {
    ($($root:literal)/+) => {
        warp::path!($($root)/+ / "orgs" / ..)
            .and(warp::path::param::<$crate::api::auth::AnySegment>())
            .and(warp::path("workspaces"))
            .and(warp::path::param::<$crate::api::auth::AnySegment>())
            .map(|_, _| ())
            .untuple_one()
    };
    ($($root:literal)/+ ; $($rest:tt)*) => {
        $crate::api::auth::workspace_path!($($root)/+).and(warp::path!($($rest)*))
    };
}
pub(crate) use workspace_path;

/// Checks `X-API-Key` against the workspace of the path (with `keys`, the configured keys
/// it matched, when found before).
pub(crate) fn authorize(
    app: &App,
    meta: &RequestMeta,
    keys: Option<&KeyMatch>,
    org_id: &str,
    workspace_id: &str,
) -> Result<Principal, ApiError> {
    authorize_key(app, meta.header(&API_KEY), keys, org_id, workspace_id)
}

/// [`authorize`] of the key `presented` (the `X-API-Key` as text, if sent); with `keys`,
/// the configured keys it matched ([`crate::auth::KeyTable::matching`]), it is not
/// compared again.
pub(crate) fn authorize_key(
    app: &App,
    presented: Option<&str>,
    keys: Option<&KeyMatch>,
    org_id: &str,
    workspace_id: &str,
) -> Result<Principal, ApiError> {
    let ws = WorkspaceRef::new(org_id, workspace_id);
    let Some(presented) = presented else {
        return Err(ApiError::Unauthorized {
            code: "missing_api_key",
            message: "send the workspace's key in the X-API-Key header".into(),
        });
    };
    let name = match keys {
        Some(keys) => app.auth.name_opening(keys, &ws).map(String::from),
        None => app.auth.check(presented, &ws),
    };
    match name {
        Some(name) => Ok(Principal { ws, name }),
        None => {
            let refused = format!(
                "the X-API-Key is not valid for org '{org_id}' and workspace '{workspace_id}'"
            );
            // A key sent as `Bearer <key>`: the scheme is named, never the key.
            let message = match crate::journal::causes::scheme_hint(presented) {
                Some(hint) => format!("{refused}: {hint}"),
                None => refused,
            };
            Err(ApiError::Unauthorized {
                code: "invalid_api_key",
                message,
            })
        }
    }
}

/// The journal and fault routes: a workspace's key sees and clears its workspace's entries
/// and rules, an operator's key everyone's. Answers what the key may see.
pub(crate) fn authorize_scope(app: &App, meta: &RequestMeta) -> Result<Scope, ApiError> {
    let Some(presented) = meta.header(&API_KEY) else {
        return Err(ApiError::Unauthorized {
            code: "missing_api_key",
            message: "send a workspace's key (or an operator's key) in the X-API-Key header".into(),
        });
    };
    app.auth.scope(presented).ok_or(ApiError::Unauthorized {
        code: "invalid_api_key",
        message: "the X-API-Key is not a key of this platform".into(),
    })
}

/// The reset of one workspace: its own key, or an operator's key.
pub(crate) fn authorize_reset(
    app: &App,
    meta: &RequestMeta,
    keys: Option<&KeyMatch>,
    org_id: &str,
    workspace_id: &str,
) -> Result<WorkspaceRef, ApiError> {
    let ws = WorkspaceRef::new(org_id, workspace_id);
    if let Some(presented) = meta.header(&API_KEY)
        && app.auth.scope(presented) == Some(Scope::Operator)
    {
        return Ok(ws);
    }
    authorize(app, meta, keys, org_id, workspace_id).map(|p| p.ws)
}

/// The clock routes act on the whole instance: any workspace's key (or a clock admin key)
/// reads the clock; moving it takes a clock admin key once the platform has any
/// (`clock_admin_keys`), else any workspace's key.
pub(crate) fn authorize_clock(app: &App, meta: &RequestMeta, moving: bool) -> Result<(), ApiError> {
    let Some(presented) = meta.header(&API_KEY) else {
        return Err(ApiError::Unauthorized {
            code: "missing_api_key",
            message: "send a workspace's key in the X-API-Key header".into(),
        });
    };
    let unknown = || ApiError::Unauthorized {
        code: "invalid_api_key",
        message: "the X-API-Key is not a key of this platform".into(),
    };
    if !moving {
        return app
            .auth
            .may_read_clock(presented)
            .then_some(())
            .ok_or_else(unknown);
    }
    match app.auth.clock_mover(presented) {
        ClockMover::Allowed => Ok(()),
        ClockMover::NotAdmin => Err(ApiError::Forbidden {
            code: "clock_admin_key_required",
            message: "this platform lets only its clock admin keys move the shared simulated clock (--clock-admin-key); a workspace's key may read it with GET /sim/v1/clock".into(),
        }),
        ClockMover::Unknown => Err(unknown()),
    }
}

#[cfg(test)]
mod tests {
    use super::workspace_of;

    #[test]
    fn the_workspace_of_a_path_is_the_first_orgs_id_workspaces_id_in_a_row() {
        let list = "/api/app-authoring/v1/orgs/org-1/workspaces/ws-1/deployments";
        assert_eq!(workspace_of(list), Some(("org-1", "ws-1")));
        assert_eq!(
            workspace_of("/orgs/o/workspaces/w"),
            Some(("o", "w")),
            "at the start, nothing after"
        );
        assert_eq!(
            workspace_of("/sim/v1/orgs/a/workspaces/b/orgs/c/workspaces/d"),
            Some(("a", "b")),
            "the first"
        );
        assert_eq!(
            workspace_of("/x/orgs/orgs/workspaces/workspaces/w"),
            Some(("orgs", "workspaces"))
        );
        assert_eq!(
            workspace_of("/orgs//workspaces/"),
            Some(("", "")),
            "empty ids are the key check's to refuse"
        );
        for none in ["", "/", "/orgs/o/workspaces", "/orgs/o/teams/w", "/healthz"] {
            assert_eq!(workspace_of(none), None, "{none}");
        }
    }
}
